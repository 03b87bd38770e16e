"""The web tools.

The safe fetcher and its address rule, search providers, pages to text, and the web.* actions.
"""
