"""A document's media type, whoever gave it (a browser, an MCP server, a tool): `type/subtype`
with well-formed parameters, no control character, so it can always be sent back as a
download's Content-Type (a line break there made every download of the document fail)."""

from __future__ import annotations

import mimetypes
import re

OCTET_STREAM = "application/octet-stream"
_TOKEN = r"[A-Za-z0-9!#$&^_.+-]"
_ESSENCE = re.compile(rf"^{_TOKEN}{{1,63}}/{_TOKEN}{{1,126}}$")
_PARAMETER = re.compile(rf'^{_TOKEN}{{1,63}}=(?:{_TOKEN}{{1,100}}|"[^"\\\x00-\x1f\x7f]{{0,100}}")$')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MOST = 127
"""The stored column's length."""


def clean(given: str, *, name: str = "") -> str:
    """`given` as a valid media type (lower-cased type and subtype, only its well-formed
    parameters), else the type the name suggests, else application/octet-stream."""
    given = _CONTROL.split(given or "", maxsplit=1)[0]  # nothing after a line break counts
    essence, *parameters = given.split(";")
    essence = essence.strip().lower()
    if not _ESSENCE.match(essence):
        return guessed(name)
    kept = [p.strip() for p in parameters if _PARAMETER.match(p.strip())]
    full = "; ".join([essence, *kept])
    return full if len(full) <= MOST else essence


def guessed(name: str) -> str:
    """The media type a file name suggests (application/octet-stream when none)."""
    return mimetypes.guess_type(name)[0] or OCTET_STREAM


def for_download(stored: str) -> str:
    """A stored media type fit for a Content-Type header (one stored before types were
    checked may hold anything)."""
    return clean(stored) if stored else OCTET_STREAM
