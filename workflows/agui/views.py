"""`POST /api/v1/agui`: a RunAgentInput in, the run's AG-UI events out over Server-Sent Events.

The stream opens with RUN_STARTED and the round's state (STATE_SNAPSHOT), then follows the
round's events from the database and the channel layer (`live.feed.Feed`: in seq order,
each once, through any process and across restarts) translated one by one, and ends with
the run: RUN_FINISHED (success, cancelled, or an interrupt for a question the round waits
on) or RUN_ERROR. Each event translated from a stored one carries `id:` its seq, so a client
that lost the stream can ask for the same run again (same `threadId` and `runId`) with
`Last-Event-ID` and go on where it was. A comment line comes after every silence. A client
that goes away leaves the round running: it is a round like any other, in the page.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable

from ag_ui.core import PROTOCOL_VERSION, BaseEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connections
from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from workflows.api.auth import still_allowed
from workflows.api.errors import Problem, not_found
from workflows.api.routes.stream import HEARTBEAT, outside_request
from workflows.live.feed import Feed, FeedEnded

from .inputs import read_input
from .runs import Plan, begin, prepare
from .translate import Translator

GONE = "The workflow was deleted while the round ran."
ENCODER = EventEncoder()


@csrf_exempt  # a bearer token, never a cookie
@login_not_required  # the token is the key: refused with 401 here, never sent to sign in
async def agui_run(request: HttpRequest) -> HttpResponseBase:
    """Run PowerOn for an AG-UI client (see the module)."""
    if request.method != "POST":
        detail = "This address takes POST (a RunAgentInput)."
        return Problem("method-not-allowed", detail, headers={"Allow": "POST"}).response(request)
    try:
        run = read_input(request.body)
        plan = await database_sync_to_async(prepare)(request, run)
        await begin(plan, run)
    except Problem as problem:
        return problem.response(request)
    except Http404:
        return not_found(request)
    assert plan.workflow is not None
    page = request.build_absolute_uri(plan.workflow.get_absolute_url())
    translator = Translator(
        workflow=plan.workflow.pk, round=plan.round, page=page, thread_id=run.thread_id,
        run_id=run.run_id, run_after=plan.run_after,
    )  # fmt: skip
    events = request.build_absolute_uri(
        reverse("api-1:stream_events", kwargs={"workflow_id": plan.workflow.pk})
    )
    where = {"workflow": plan.workflow.pk, "round": plan.round, "page": page, "events": events}
    started = RunStartedEvent(
        thread_id=run.thread_id, run_id=run.run_id, protocol_version=PROTOCOL_VERSION,
        metadata={"poweron": {**where, "kind": plan.kind}},
    )  # fmt: skip
    response = StreamingHttpResponse(
        stream(plan, translator, started), content_type=ENCODER.get_content_type()
    )
    response["Cache-Control"] = "no-cache, no-store"
    response["X-Accel-Buffering"] = "no"  # a proxy in front passes each event on at once
    response["X-PowerOn-Workflow"] = str(plan.workflow.pk)
    return response


def sse(events: Iterable[BaseEvent], seq: int | None = None) -> bytes:
    """AG-UI events as SSE, the last with `id:` the seq of the event they come from."""
    encoded = [ENCODER.encode(event) for event in events]
    if encoded and seq is not None:
        encoded[-1] = f"id: {seq}\n{encoded[-1]}"
    return "".join(encoded).encode()


async def stream(
    plan: Plan, translator: Translator, started: RunStartedEvent
) -> AsyncIterator[bytes]:
    """The run's bytes (see the module). Events up to `plan.emit_after` only bring the state
    (a resumed run, or a reconnect after its Last-Event-ID), then the opening brings the
    client there."""
    assert plan.workflow is not None
    await sync_to_async(connections.close_all)()  # the request's connection is not needed
    yield sse([started])
    opened = plan.emit_after <= plan.round_start
    if opened:
        yield sse(translator.opening())
    beat = float(settings.POWERON_SSE_HEARTBEAT_SECONDS)
    checked = time.monotonic()
    gone = ""
    async with Feed(plan.workflow.pk, after=plan.round_start) as feed:
        while translator.outcome is None:
            try:
                frame = await feed.get(timeout=beat)
            except FeedEnded:
                gone = GONE
                break
            if time.monotonic() - checked >= beat:
                if not await outside_request(allowed(plan)):
                    return
                checked = time.monotonic()
            if frame is None:
                yield HEARTBEAT
                continue
            if not opened and (frame.seq is None or frame.seq > plan.emit_after):
                opened = True  # past what the client has: bring it here first
                yield sse(translator.opening())
            out = translator.take(frame.envelope)
            if not opened:  # the client has this one: only the state moves
                if frame.seq == plan.emit_after or translator.outcome is not None:
                    opened = True
                    yield sse(translator.opening(), frame.seq)
                continue
            yield sse(out, frame.seq)
    if not opened:
        yield sse(translator.opening())
    yield sse(translator.closing(gone=gone))


async def allowed(plan: Plan) -> bool:
    """Whether the caller's token still serves (not revoked or expired, its owner active)."""
    return bool(await database_sync_to_async(still_allowed)(plan.principal, ""))
