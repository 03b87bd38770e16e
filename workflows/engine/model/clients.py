"""The openai SDK's clients: one per settings and event loop, shared by every run, and the
in-process one a start-up rehearsal calls through (llm.py makes the calls).

Creating a client costs tens of milliseconds and its connections stay open between runs, so
every run of a loop reuses the loop's (`shared_client`). A rehearsal client answers from an
in-process transport: the SDK builds on a first call what it would otherwise build during a
user's first round, and nothing leaves the process (`rehearsal_client`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from openai import AsyncOpenAI
from pydantic import BaseModel

from workflows.engine.model.bounded import MAX_REPLY_BYTES, bounded_http_client
from workflows.engine.records.protocols import Message

try:  # the SDK's own HTTP library, for the in-process transport
    import httpx2 as http  # openai 3
except ImportError:  # pragma: no cover
    import httpx as http  # type: ignore[no-redef]  # openai 1 and 2


# --- One client per settings and loop ---------------------------------------------------------


class _LoopClients:
    """The shared clients of one event loop, closed when the loop shuts down.

    An httpx client's connections belong to the loop that opened them, so every loop has its
    own clients. The closer is an async generator of the loop: asyncio.run (and every runner
    built on it) closes those at shutdown, which closes the clients with their connections.
    """

    def __init__(self) -> None:
        self.clients: dict[tuple[Any, ...], AsyncOpenAI] = {}
        self._closer = self._close_at_shutdown()
        with contextlib.suppress(StopIteration):  # runs it to its yield: the loop now knows it
            self._closer.asend(None).send(None)

    async def _close_at_shutdown(self) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            clients, self.clients = list(self.clients.values()), {}
            for client in clients:
                await client.close()


_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = (
    weakref.WeakKeyDictionary()
)


def shared_client(
    *,
    base_url: str | None,
    api_key: str,
    timeout: float,
    max_retries: int,
    max_reply_bytes: int = MAX_REPLY_BYTES,
) -> AsyncOpenAI:
    """The AsyncOpenAI client for these settings in the running event loop: created on first
    use, then reused by every caller in the loop (its response bodies bounded by
    `max_reply_bytes`). Callers never close it."""
    loop = asyncio.get_running_loop()
    shared = _SHARED.get(loop)
    if shared is None:
        shared = _SHARED[loop] = _LoopClients()
    key = (base_url, api_key, timeout, max_retries, max_reply_bytes)
    client = shared.clients.get(key)
    if client is None:
        client = shared.clients[key] = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "unused",
            timeout=timeout,
            max_retries=max_retries,
            http_client=bounded_http_client(max_reply_bytes),
        )
        client.chat.completions  # noqa: B018  (imports its resources now, not on the first call)
    return client


# --- A rehearsal -------------------------------------------------------------------------------


@contextlib.contextmanager
def unlogged_requests() -> Iterator[None]:
    """The HTTP library logs no request meanwhile: a rehearsal's calls are answered in the
    process, and an operator reading "HTTP Request: POST …/chat/completions 200 OK" at start
    would think the model was called."""
    logger = logging.getLogger(http.__name__)
    drop = logging.Filter(name="\0")  # matches no logger's name: every record is dropped
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def rehearsal_client(client: AsyncOpenAI) -> AsyncOpenAI:
    """A copy of `client` (its settings, no retries) answered by an in-process transport."""
    transport = http.MockTransport(_rehearsal_reply)
    return client.copy(http_client=http.AsyncClient(transport=transport), max_retries=0)


class Rehearsal(BaseModel):
    """The answer a rehearsal asks for."""

    answer: str


REHEARSAL: list[Message] = [{"role": "user", "content": "Rehearsal."}]
"""The messages of a rehearsal call."""


async def ignore(piece: str) -> None:
    """A streamed answer's pieces, dropped."""
    return None


def _rehearsal_reply(request: http.Request) -> http.Response:
    """What the in-process transport of a rehearsal client answers: a completion, or its chunks."""
    content = '{"answer": "ready"}'
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    # Ignored for mypy below: the details are a nested object, as on the wire.
    usage["prompt_tokens_details"] = {"cached_tokens": 0}  # type: ignore[assignment]
    head = {"id": "rehearsal", "created": 0, "model": "rehearsal"}
    if not json.loads(request.content).get("stream"):
        message = {"role": "assistant", "content": content}
        choice = {"index": 0, "finish_reason": "stop", "message": message}
        body = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        return http.Response(200, json=body)
    chunk = {**head, "object": "chat.completion.chunk"}
    delta = {"index": 0, "delta": {"content": content}, "finish_reason": "stop"}
    events = [{**chunk, "choices": [delta]}, {**chunk, "choices": [], "usage": usage}]
    text = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    headers = {"content-type": "text/event-stream"}
    return http.Response(200, headers=headers, content=text.encode())
