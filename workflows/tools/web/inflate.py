"""Bounded decompression of response bodies: a gzip bomb stops at the size cap."""

from __future__ import annotations

import zlib

from workflows.tools.web.fetch_errors import FetchFailed, FetchUnsupported


class Inflater:
    """Decodes gzip/deflate bodies a piece at a time, never producing more than asked."""

    def __init__(self, encoding: str, url: str) -> None:
        self._url = url
        self._raw_fallback = encoding == "deflate"
        if encoding in ("", "identity"):
            self._zlib = None
        elif encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
        else:
            raise FetchUnsupported(f"{url} is sent with {encoding} encoding, not read", url=url)

    def feed(self, data: bytes, room: int) -> bytes:
        """Decode data; stop once more than `room` bytes came out (the caller then aborts)."""
        if self._zlib is None:
            return data
        out = bytearray()
        pending = data
        while pending and len(out) <= room:
            try:
                out += self._zlib.decompress(pending, room - len(out) + 1)
            except zlib.error:
                if not self._raw_fallback:
                    raise FetchFailed(f"{self._url} sent a corrupt compressed body") from None
                # Some servers send raw deflate without the zlib header.
                self._raw_fallback = False
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._raw_fallback = False
            pending = self._zlib.unconsumed_tail
        return bytes(out)
