"""A workflow's run: its state, and what the page's buttons do to it (stop, steer, answer the
step-limit question, approve or reject an action), through the same launcher calls."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.http import HttpRequest
from ninja import Router, Status

from workflows import selectors
from workflows.api import shapes
from workflows.api.auth import READ, RUN, caller
from workflows.api.errors import Problem, rate_limited, responses
from workflows.api.schemas import ApproveIn, ExtendIn, RunOut, SteerIn
from workflows.execution import launcher
from workflows.models import ChatWorkflow

from .workflows import WorkflowId

router = Router(tags=["runs"])


async def owned(request: HttpRequest, workflow_id: int) -> ChatWorkflow:
    return await database_sync_to_async(selectors.workflow_get)(
        user=caller(request).user, workflow_id=workflow_id
    )


async def state(workflow_id: int) -> dict[str, Any]:
    workflow = await ChatWorkflow.objects.aget(pk=workflow_id)
    return await database_sync_to_async(shapes.run_out)(workflow)


@router.get("/workflows/{workflow_id}/run", response=RunOut, auth=READ, operation_id="get_run")
def get_run(request: HttpRequest, workflow_id: WorkflowId) -> dict[str, Any]:
    """The run's state: idle, queued (with how many runs wait ahead), running, waiting (with
    the question it waits on), stopping, or final (completed, failed, stopped) with why."""
    return shapes.run_out(
        selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    )


@router.post(
    "/workflows/{workflow_id}/run/stop",
    response={202: RunOut},
    auth=RUN,
    operation_id="stop_run",
    openapi_extra={"responses": responses(409)},
)
async def stop_run(request: HttpRequest, workflow_id: WorkflowId) -> Status[dict[str, Any]]:
    """Stop the run now and for good: the model call and the tool in flight are cancelled,
    what it did is kept, and it ends as stopped (202: it may still be stopping)."""
    await owned(request, workflow_id)
    try:
        await launcher.request_stop(workflow_id=workflow_id)
    except launcher.CommandRefused as refused:
        raise Problem("not-running", str(refused)) from refused
    return Status(202, await state(workflow_id))


@router.post(
    "/workflows/{workflow_id}/run/steer",
    response={202: RunOut},
    auth=RUN,
    operation_id="steer_run",
    openapi_extra={"responses": responses(409, 422)},
)
async def steer_run(
    request: HttpRequest, workflow_id: WorkflowId, payload: SteerIn
) -> Status[dict[str, Any]]:
    """Send a note the agent reads before it chooses its next action (it does not stop)."""
    await owned(request, workflow_id)
    try:
        await launcher.steer(workflow_id=workflow_id, text=payload.text)
    except launcher.CommandLimited as limited:
        raise rate_limited(str(limited), limited.retry_after) from None
    except launcher.CommandRefused as refused:
        raise Problem("not-running", str(refused)) from refused
    return Status(202, await state(workflow_id))


@router.post(
    "/workflows/{workflow_id}/run/extend",
    response={202: RunOut},
    auth=RUN,
    operation_id="answer_step_limit",
    openapi_extra={"responses": responses(409, 422)},
)
async def answer_step_limit(
    request: HttpRequest, workflow_id: WorkflowId, payload: ExtendIn
) -> Status[dict[str, Any]]:
    """Answer the step-limit question the run waits on: go on for `steps` more, or stop the
    task with its work kept (`steps` 0, or `answer` "stop")."""
    await owned(request, workflow_id)
    try:
        await launcher.answer(workflow_id=workflow_id, kind="extend", value=payload.steps)
    except launcher.CommandLimited as limited:
        raise rate_limited(str(limited), limited.retry_after) from None
    except launcher.CommandRefused as refused:
        raise Problem("no-open-question", str(refused)) from refused
    return Status(202, await state(workflow_id))


@router.post(
    "/workflows/{workflow_id}/run/approval",
    response={202: RunOut},
    auth=RUN,
    operation_id="answer_approval",
    openapi_extra={"responses": responses(409, 422)},
)
async def answer_approval(
    request: HttpRequest, workflow_id: WorkflowId, payload: ApproveIn
) -> Status[dict[str, Any]]:
    """Approve (true) or reject (false) the action the run waits to have approved."""
    await owned(request, workflow_id)
    try:
        await launcher.answer(workflow_id=workflow_id, kind="approve", value=payload.approved)
    except launcher.CommandLimited as limited:
        raise rate_limited(str(limited), limited.retry_after) from None
    except launcher.CommandRefused as refused:
        raise Problem("no-open-question", str(refused)) from refused
    return Status(202, await state(workflow_id))
