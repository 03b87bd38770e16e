"""Where runs live: one asyncio task per running workflow, decoupled from any socket.

Starting claims the workflow in the database (one run per workflow), so a second start is
refused wherever it comes from. The run then executes in this process (POWERON_RUNNER
"inline", the default) or in a `run_workers` process that takes it from the channel layer
("worker"). Stopping is a control message to whichever process runs it.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from workflows import services
from workflows.contract import Envelope, RunEvent
from workflows.live import broadcast
from workflows.models import ChatWorkflow

from . import recording
from .runner import RoundRunner

logger = logging.getLogger(__name__)

_tasks: dict[int, asyncio.Task[str]] = {}


class CommandRefused(Exception):
    """The request is understood but cannot be carried out now; the text says why."""


RUNS_CHANNEL = "poweron-runs"
"""Where `run_workers` processes take runs from (POWERON_RUNNER=worker)."""


async def start_round(*, workflow_id: int, user, text: str, document_ids: list[int]) -> None:
    """Open a round with the user's message and run it in the background."""
    try:
        workflow, message, opened = await database_sync_to_async(services.round_open)(
            workflow_id=workflow_id, owner=user, text=text, document_ids=document_ids
        )
    except services.WorkflowBusy as busy:
        raise CommandRefused(str(busy)) from busy
    await broadcast.broadcast(opened)
    if settings.POWERON_RUNNER == "worker":
        await get_channel_layer().send(
            RUNS_CHANNEL, {"type": "run.start", "workflow": workflow.pk, "message": message.pk}
        )
        return
    spawn(RoundRunner(workflow, message))


def spawn(run: RoundRunner) -> asyncio.Task[str]:
    """Run in the background of this process, remembered until it ends."""
    workflow_id = run.workflow.pk
    task = asyncio.create_task(run.execute(), name=f"workflow-{workflow_id}")
    _tasks[workflow_id] = task
    task.add_done_callback(lambda done: _forget(workflow_id, done))
    return task


def _forget(workflow_id: int, task: asyncio.Task[str]) -> None:
    if _tasks.get(workflow_id) is task:
        del _tasks[workflow_id]
    if not task.cancelled() and task.exception() is not None:
        logger.error("run of workflow %s crashed", workflow_id, exc_info=task.exception())


async def cancel_all() -> None:
    """Cancel every run of this process and wait until each has recorded its final status."""
    tasks = list(_tasks.values())
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def request_stop(*, workflow_id: int) -> None:
    """Ask the run to stop now; it records what it did and ends as "stopped"."""
    marked = await database_sync_to_async(
        lambda: ChatWorkflow.objects.filter(
            pk=workflow_id, status=ChatWorkflow.Status.RUNNING
        ).update(status=ChatWorkflow.Status.STOPPING)
    )()
    if not marked and not await is_active(workflow_id=workflow_id):
        raise CommandRefused("Nothing is running in this workflow.")
    if marked:  # viewers see "stopping" at once, before the run has wound down
        stored = await database_sync_to_async(stopping_record)(workflow_id)
        await broadcast.broadcast(stored)
    await broadcast.send_control(workflow_id, {"action": "stop"})


def stopping_record(workflow_id: int) -> Envelope:
    """Store the "stopping" status of the workflow's current round."""
    current = ChatWorkflow.objects.values_list("current_round", flat=True).get(pk=workflow_id)
    event = RunEvent(round=current, status="stopping", reason="Stop requested.")
    return recording.record(workflow_id, event)


async def is_active(*, workflow_id: int) -> bool:
    """Whether the workflow has a run in progress (in any process)."""
    return await ChatWorkflow.objects.filter(
        pk=workflow_id, status__in=ChatWorkflow.ACTIVE_STATUSES
    ).aexists()


async def wait_for(workflow_id: int) -> str | None:
    """Wait until this process's run of the workflow ends; its final status (tests, CLI)."""
    task = _tasks.get(workflow_id)
    if task is None:
        return None
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.cancelled():
            return ChatWorkflow.Status.STOPPED
        raise
