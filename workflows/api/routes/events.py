"""A workflow's stored events, paged by seq: the same typed JSON the live socket sends with
`format=json`, for a program that polls (or catches up before it listens live)."""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Query, Router

from workflows import selectors
from workflows.api import shapes
from workflows.api.auth import READ, caller
from workflows.api.schemas import BIGINT, EventPage

from .workflows import WorkflowId

router = Router(tags=["events"])

PAGE_MOST = 500
"""As many events as the socket replays at once."""


@router.get(
    "/workflows/{workflow_id}/events",
    response=EventPage,
    auth=READ,
    operation_id="list_events",
)
def list_events(
    request: HttpRequest,
    workflow_id: WorkflowId,
    after: Annotated[int, Query(ge=0, le=BIGINT, description="The last seq you have.")] = 0,
    limit: Annotated[int, Query(ge=1, le=PAGE_MOST)] = 100,
) -> dict[str, Any]:
    """The stored events after `after`, in seq order, at most `limit`: every step of every
    round, as it was streamed. Ask again with `after` = `next` until `more` is false; a
    run has ended when its last event is a `run` event with a final status."""
    workflow = selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    rows = list(selectors.event_list_after(workflow_id=workflow.pk, after_seq=after)[: limit + 1])
    page = [shapes.event_out(row) for row in rows[:limit]]
    last = max(workflow.last_seq, page[-1]["seq"] if page else 0)
    return {
        "events": page,
        "lastSeq": last,
        # Past the end counts as the end, as on the socket: the events that come next are
        # still found by the next `after`.
        "next": page[-1]["seq"] if page else min(after, last),
        "more": len(rows) > limit,
    }
