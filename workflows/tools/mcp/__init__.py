"""MCP servers as tool sources.

Their settings, how they are reached, and their tools as actions.
"""
