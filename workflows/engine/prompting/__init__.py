"""Prompting and the catalog.

The prompts, the catalog a task sees (ranked and narrowed), Stage 1's selection, the shared
cached head and the history.
"""
