"""A `websockets` client that says it comes from the page of the app it connects to."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import connect as websockets_connect


def page_origin(url: str) -> str:
    """The origin of the app's own pages for a socket URL: ws://h:p/… → http://h:p."""
    parts = urlsplit(url)
    return f"{'https' if parts.scheme == 'wss' else 'http'}://{parts.netloc}"


def connect(url: str, **kwargs: Any):
    """websockets' connect, with the Origin the app's own page would send."""
    kwargs.setdefault("origin", page_origin(url))
    return websockets_connect(url, **kwargs)
