"""A workflow's events as they happen, over Server-Sent Events.

Every stored event after a seq, then the live ones, each as one SSE event: `id:` its seq,
`event:` its type, `data:` its JSON (exactly what the socket's `format=json` and `/events`
send). The live frames of an answer being written (`delta` with seq null) come as
`event: delta` without an `id:`, so a reconnecting client's Last-Event-ID stays the last
stored event, whose replay brings the text so far. The order is the socket's
(`live.follow`): resumed after `Last-Event-ID` (what a browser's EventSource sends when it
reconnects) or `?after=`, with no gap and no duplicate, through whichever process serves it
(the channel layer) and across restarts (the database).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any, Literal, TypeVar

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connections
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Header, Query, Router

from workflows import selectors
from workflows.api.auth import READ, caller, still_allowed
from workflows.api.event_schema import PATH as SCHEMA_PATH
from workflows.api.schemas import BIGINT
from workflows.live.feed import Feed, FeedEnded
from workflows.live.follow import Frame

from .workflows import WorkflowId

router = Router(tags=["events"])

MEDIA_TYPE = "text/event-stream"
RETRY_MS = 1500
"""How soon a browser's EventSource reconnects after the stream ends (as the page does)."""
HEARTBEAT = b": keepalive\n\n"
WRITE_MOST = 64
"""Events already waiting go out in one write, at most this many: a reader catching up,
or a busy process, writes fewer, fuller chunks (an event that waits alone goes at once)."""
T = TypeVar("T")

STREAM = {
    "description": (
        "Server-Sent Events, one per event: `id:` its seq, `event:` its type, `data:` its "
        "JSON, as `/events` sends it (each validates against "
        f"[{SCHEMA_PATH}]({SCHEMA_PATH})); live frames of an answer being written as "
        "`event: delta` without an id; a comment line (`: keepalive`) after a silence."
    ),
    "content": {MEDIA_TYPE: {"schema": {"type": "string"}}},
}


def sse(frame: Frame) -> bytes:
    """One event as an SSE event (its JSON is one line: JSON escapes line breaks)."""
    head = f"id: {frame.seq}\n" if frame.seq is not None else ""
    return f"{head}event: {frame.type}\ndata: {frame.json}\n\n".encode()


def outside_request(work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Run `work` in a context of its own: its database calls go where the sockets' go, not
    to the request's own thread and connection, which would stay open for the whole stream."""
    return asyncio.get_running_loop().create_task(work, context=contextvars.Context())


async def event_stream(
    workflow_id: int,
    *,
    after: int,
    until_final: bool,
    allowed: Callable[[], Coroutine[Any, Any, bool]],
) -> AsyncIterator[bytes]:
    """The stream's bytes: the events after `after`, heartbeats in silences, until the
    client goes (Django cancels this), the workflow is deleted, the caller may no longer
    read (a revoked token, a signed-out session), or with `until_final` after the first
    final run status."""
    # The request's own database connection is not needed again: close it, not keep it open.
    await sync_to_async(connections.close_all)()
    yield f"retry: {RETRY_MS}\n\n".encode()
    beat = float(settings.POWERON_SSE_HEARTBEAT_SECONDS)
    checked = time.monotonic()
    async with Feed(workflow_id, after=after) as feed:
        while True:
            try:
                frame = await feed.get(timeout=beat)
            except FeedEnded:
                return
            if time.monotonic() - checked >= beat:
                if not await outside_request(allowed()):
                    return
                checked = time.monotonic()
            if frame is None:
                yield HEARTBEAT
                continue
            frames = [frame, *feed.waiting(WRITE_MOST - 1)]
            if until_final:
                final = next((i for i, each in enumerate(frames) if each.final), None)
                if final is not None:
                    yield b"".join(map(sse, frames[: final + 1]))
                    return
            yield b"".join(map(sse, frames))


@router.get(
    "/workflows/{workflow_id}/events/stream",
    auth=READ,
    operation_id="stream_events",
    openapi_extra={"responses": {200: STREAM}},
)
async def stream_events(
    request: HttpRequest,
    workflow_id: WorkflowId,
    after: Annotated[int, Query(ge=0, le=BIGINT, description="The last seq you have.")] = 0,
    until: Annotated[
        Literal["final"] | None,
        Query(description="`final`: end after the first final run status after `after`."),
    ] = None,
    last_event_id: Annotated[
        int | None,
        Header(
            alias="Last-Event-ID",
            ge=0,
            le=BIGINT,
            description="The last seq you have, as EventSource sends it on reconnecting "
            "(wins over `after`).",
        ),
    ] = None,
) -> Any:
    """Every stored event after `after` (or `Last-Event-ID`) in order, then the live ones as
    they happen, over Server-Sent Events, each once: the same JSON as `/events`. Reconnect
    with `Last-Event-ID` (a browser's EventSource does it by itself) to go on where you were,
    through any process and after a restart. A comment line comes after every silence of
    POWERON_SSE_HEARTBEAT_SECONDS (15 s). With `until=final` the stream ends after the run's
    final status (`run` with completed, failed or stopped); without it, it goes on, event
    after event and round after round, until you close it or the workflow is deleted."""
    principal = caller(request)
    workflow = await database_sync_to_async(selectors.workflow_get)(
        user=principal.user, workflow_id=workflow_id
    )
    # Past the end counts as the end, as on the socket: from what is stored now, so what is
    # stored before the stream listens is still sent.
    start = min(last_event_id if last_event_id is not None else after, workflow.last_seq)
    session = getattr(request, "session", None)
    session_key = (session.session_key if session is not None else "") or ""

    async def allowed() -> bool:
        return bool(await database_sync_to_async(still_allowed)(principal, session_key))

    stream = event_stream(
        workflow_id,
        after=start,
        until_final=until == "final",
        allowed=allowed,
    )
    response = StreamingHttpResponse(stream, content_type=MEDIA_TYPE)
    response["Cache-Control"] = "no-cache, no-store"
    response["X-Accel-Buffering"] = "no"  # a proxy in front passes each event on at once
    return response
