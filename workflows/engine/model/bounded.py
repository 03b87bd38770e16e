"""A model's reply is bounded in size, whatever the server does with `max_tokens`.

A streamed reply's text is cut at `max_reply_bytes` (its UTF-8 bytes): what came before is
kept, the stream is closed, and the reply says it was cut (`capped`: a plain answer ends with
a note, a structured one finishes for length). Beneath that, every
response body the SDK reads is bounded too (`bounded_http_client`): a reply read whole (a
structured answer) larger than `RAW_FACTOR` times the limit, or a stream of that many bytes,
fails as `ReplyTooLarge` instead of being held in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai

try:  # the SDK's own HTTP library
    import httpx2 as http  # openai 3
except ImportError:  # pragma: no cover
    import httpx as http  # type: ignore[no-redef]  # openai 1 and 2

MAX_REPLY_BYTES = 512 * 1024
"""The most bytes of text one model reply may hold (POWERON_LLM_MAX_REPLY_BYTES): about
130,000 tokens, far beyond any call's `max_tokens`."""
RAW_FACTOR = 8
"""A response body may be this many times the limit: a stream's framing (each piece wrapped
in its JSON chunk) and a whole reply's escaping are larger than its text."""


class ReplyTooLarge(openai.APIError):
    """A model server sent more than the response body limit; it was not read further."""

    def __init__(self, limit: int, request: Any) -> None:
        super().__init__(
            f"its reply was larger than {limit:,} bytes and was not read further "
            "(POWERON_LLM_MAX_REPLY_BYTES)",
            request,
            body=None,
        )
        self.limit = limit


class ReplyCap:
    """Counts a streamed reply's bytes; `take` gives what of a piece still fits, and `cut`
    says the reply reached the limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.cut = False

    def take(self, piece: str) -> str:
        """The part of `piece` within the limit (cut at a character, never inside one)."""
        if self.cut:
            return ""
        size = len(piece.encode("utf-8", "surrogatepass"))
        if self.used + size <= self.limit:
            self.used += size
            return piece
        room = self.limit - self.used
        kept = piece.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
        self.used += len(kept.encode("utf-8", "surrogatepass"))
        self.cut = True
        return kept


async def capped(stream: Any, limit: int, *, note: str = "") -> AsyncIterator[Any]:
    """The chunks of a streamed reply until its text reaches `limit` bytes: the chunk that
    reaches it is cut there (with `note` after it) and says it finished for length; the rest
    is not read (the stream is closed)."""
    cap = ReplyCap(limit)
    try:
        async for chunk in stream:
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None and delta.content and not cap.cut:
                    delta.content = cap.take(delta.content)
                    if cap.cut:
                        delta.content += note
                        choice.finish_reason = "length"
            yield chunk
            if cap.cut:
                return
    finally:
        await stream.close()


def cut_note(limit: int) -> str:
    """What the host adds under an answer that was cut at the limit."""
    return (
        f"\n\n> Note from PowerOn: the model's answer was cut here, at {limit:,} bytes "
        "(POWERON_LLM_MAX_REPLY_BYTES); its server sent more than that."
    )


class _Capped(http.AsyncByteStream):
    """A response body that fails once it passes `limit` bytes."""

    def __init__(self, inner: Any, limit: int, request: Any, shown: int) -> None:
        self.inner = inner
        self.limit = limit
        self.request = request
        self.shown = shown

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise ReplyTooLarge(self.shown, self.request)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_http_client(max_reply_bytes: int = MAX_REPLY_BYTES) -> Any:
    """The SDK's HTTP client with its defaults, every response body bounded at `RAW_FACTOR`
    times `max_reply_bytes` (a hook swaps the body before anything reads it, whichever
    transport or proxy carried it)."""
    limit = max_reply_bytes * RAW_FACTOR

    async def bound(response: Any) -> None:
        response.stream = _Capped(response.stream, limit, response.request, max_reply_bytes)

    factory = getattr(openai, "DefaultAsyncHttpx2Client", None) or openai.DefaultAsyncHttpxClient
    return factory(event_hooks={"response": [bound]})
