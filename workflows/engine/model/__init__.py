"""The model adapter.

Chat-completions calls with their retry and streaming, response formats, per-stage routing,
prices, and warming at start.
"""
