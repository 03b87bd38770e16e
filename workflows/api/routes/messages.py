"""Messages: read them, and send one (a new round), edit and re-run a round, regenerate one.
A round starts exactly as from the page (`launcher.start_round`): the same claim of the
workflow, limits and durable run."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.http import HttpRequest
from ninja import Router, Status

from workflows import selectors, services
from workflows.api import shapes
from workflows.api.auth import READ, RUN, caller
from workflows.api.errors import Problem, invalid, rate_limited, responses
from workflows.api.schemas import EditIn, MessageList, RunOut, SendIn
from workflows.execution import commands, launcher
from workflows.models import ChatWorkflow

from .workflows import RoundNumber, WorkflowId

router = Router(tags=["messages"])

STARTED = {202: RunOut}
REFUSALS = responses(409, 422, 429)


@router.get(
    "/workflows/{workflow_id}/messages",
    response=MessageList,
    auth=READ,
    operation_id="list_messages",
)
def list_messages(request: HttpRequest, workflow_id: WorkflowId) -> dict[str, Any]:
    """A workflow's messages in the order they were written: the user's, each action's
    record and the answers (with the ids of their documents)."""
    workflow = selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    return {"messages": [shapes.message_out(m) for m in selectors.message_list(workflow=workflow)]}


async def start(
    request: HttpRequest,
    workflow_id: int,
    *,
    text: str,
    documents: list[int],
    reruns: int | None,
    reruns_in_path: bool = False,
) -> Status[dict[str, Any]]:
    """Open a round as the page does; a refusal becomes its problem, with nothing stored."""
    user = caller(request).user
    await database_sync_to_async(selectors.workflow_get)(user=user, workflow_id=workflow_id)
    try:
        await launcher.start_round(
            workflow_id=workflow_id, user=user, text=text, document_ids=documents, reruns=reruns
        )
    except launcher.CommandRefused as refused:
        raise refusal(refused, reruns_in_path=reruns_in_path) from refused
    workflow = await ChatWorkflow.objects.aget(pk=workflow_id)
    return Status(202, await database_sync_to_async(shapes.run_out)(workflow))


def refusal(refused: launcher.CommandRefused, *, reruns_in_path: bool) -> Problem:
    """The problem for a round that did not open, by what refused it (an earlier round that
    does not exist: 404 when the path names it, 422 for the body's `reruns`)."""
    cause, text = refused.__cause__, str(refused)
    if isinstance(cause, services.RateLimited):
        return rate_limited(text, cause.retry_after)
    if isinstance(cause, services.TooManyRuns):
        return Problem("too-many-runs", text)
    if isinstance(cause, services.UploadsRefused):
        return invalid("documents", text)
    if isinstance(cause, services.RoundRefused):
        return Problem("not-found", text) if reruns_in_path else invalid("reruns", text)
    return Problem("already-running", text)


@router.post(
    "/workflows/{workflow_id}/messages",
    response=STARTED,
    auth=RUN,
    operation_id="send_message",
    openapi_extra={"responses": REFUSALS},
)
async def send_message(
    request: HttpRequest, workflow_id: WorkflowId, payload: SendIn
) -> Status[dict[str, Any]]:
    """Send a message: it opens a new round, which runs in the background (202, with the
    run's state). `documents` are ids of uploads not sent yet; `reruns` edits and runs an
    earlier round again. Follow the run at `/run` and its events at `/events`."""
    return await start(
        request,
        workflow_id,
        text=payload.text,
        documents=payload.documents,
        reruns=payload.reruns,
    )


@router.post(
    "/workflows/{workflow_id}/rounds/{round}/edit",
    response=STARTED,
    auth=RUN,
    operation_id="edit_round",
    openapi_extra={"responses": REFUSALS},
)
async def edit_round(
    request: HttpRequest, workflow_id: WorkflowId, round: RoundNumber, payload: EditIn
) -> Status[dict[str, Any]]:
    """Edit the message of an earlier round and run it again: a new round with copies of
    that round's uploads, which sees only the rounds before it (the earlier round stays)."""
    return await start(
        request, workflow_id, text=payload.text, documents=[], reruns=round, reruns_in_path=True
    )


@router.post(
    "/workflows/{workflow_id}/rounds/{round}/regenerate",
    response=STARTED,
    auth=RUN,
    operation_id="regenerate_round",
    openapi_extra={"responses": REFUSALS},
)
async def regenerate_round(
    request: HttpRequest, workflow_id: WorkflowId, round: RoundNumber
) -> Status[dict[str, Any]]:
    """Run an earlier round's message again as it was, for a new answer (a new round)."""
    await database_sync_to_async(selectors.workflow_get)(
        user=caller(request).user, workflow_id=workflow_id
    )
    try:
        text = await commands.round_text(workflow_id, round)
    except launcher.CommandRefused as refused:
        raise Problem("not-found", str(refused)) from refused
    return await start(
        request, workflow_id, text=text, documents=[], reruns=round, reruns_in_path=True
    )
