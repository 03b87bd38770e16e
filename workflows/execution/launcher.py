"""Starting, stopping and answering runs, from whichever process the user is connected to.

Starting claims the workflow in the database (one run per workflow, a few per user) and
stores the user's message at once; the round then runs as a durable DBOS workflow, in this
process (POWERON_RUNNER "inline", the default) or queued for `run_workers` processes
("worker"). A stop cancels the DBOS workflow for good; the user's notes and answers travel
as DBOS messages to the run, wherever it executes.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import TYPE_CHECKING, Any

from channels.db import database_sync_to_async
from dbos import DBOS
from django.conf import settings

from workflows import rates, selectors, services
from workflows.events import broadcast
from workflows.events.contract import Envelope, RunEvent
from workflows.models import ChatWorkflow

from . import durable, failover, recording, runner, settle
from .checkpoints import STEER_TOPIC, question_topic

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class CommandRefused(Exception):
    """The request is understood but cannot be carried out now; the text says why."""


async def start_round(
    *, workflow_id: int, user: User, text: str, document_ids: list[int], reruns: int | None = None
) -> None:
    """Open a round with the user's message and run it durably in the background (`reruns`:
    the earlier round it runs again, see `services.round_open`)."""
    queued = settings.POWERON_RUNNER == "worker"
    try:
        workflow, message, opened = await database_sync_to_async(services.round_open)(
            workflow_id=workflow_id,
            owner=user,
            text=text,
            document_ids=document_ids,
            queued=queued,
            max_runs=settings.POWERON_MAX_RUNS_PER_USER,
            max_rounds_per_hour=settings.POWERON_MAX_ROUNDS_PER_HOUR,
            reruns=reruns,
        )
    except services.WorkflowBusy as busy:
        raise CommandRefused(str(busy)) from busy
    await broadcast.broadcast(opened)
    if queued:  # said before the round is on the queue, where a worker may take it at once
        waiting = await database_sync_to_async(queued_record)(workflow.pk, message.round)
        await broadcast.broadcast(waiting)
    # The round outlives whoever asked for it, so it starts in a context of its own: a
    # request's async view runs under Django's sync middleware (through async_to_sync), and a
    # round started in its context would send its database calls to that request's executor,
    # gone with the request.
    starting = runner.start(durable.RunRef.of(workflow), message.pk, queued=queued)
    await asyncio.get_running_loop().create_task(starting, context=contextvars.Context())


def queued_record(workflow_id: int, round: int) -> Envelope:
    """Store that the round waits for a worker, and its place in the line."""
    ahead = selectors.runs_waiting(before_workflow=workflow_id)
    place = f" ({ahead} run{'s' if ahead != 1 else ''} ahead)" if ahead else ""
    event = RunEvent(round=round, status="queued", reason=f"Waiting for a worker{place}.")
    stored = recording.record(workflow_id, event)
    assert stored is not None
    return stored


async def watch_runs() -> None:
    """Every few seconds, in every process: fail over the runs of processes that died, and
    settle the runs that will not run again (a run stopped while its process was dead stays
    "stopping" otherwise), or say that they wait for a worker again; viewers see it. First,
    say in the log whether the channel layer answers."""
    await broadcast.check_layer()
    if unreadable := await database_sync_to_async(selectors.unreadable_connections)():
        logger.warning(
            "%d connection secret(s) cannot be opened with this SECRET_KEY or its "
            "SECRET_KEY_FALLBACKS; they sit out every round until their owners enter them "
            "again: %s",
            len(unreadable),
            ", ".join(unreadable),
        )
    while True:
        await asyncio.sleep(failover.watch_interval())
        try:
            await failover.take_over_dead_executors()
            settled = await database_sync_to_async(settle.cut_off_runs)(
                older_than_seconds=int(settings.POWERON_FAILOVER_SECONDS)
            )
            for stored in settled.values():
                for envelope in stored:
                    await broadcast.broadcast(envelope)
        except Exception:  # the watch must outlive a database blip
            logger.exception("the check of other processes' runs failed")


async def request_stop(*, workflow_id: int) -> None:
    """Stop the run now and for good; what it did is kept and it ends as "stopped"."""
    marked = await ChatWorkflow.objects.filter(
        pk=workflow_id, status__in=(ChatWorkflow.Status.RUNNING, ChatWorkflow.Status.QUEUED)
    ).aupdate(status=ChatWorkflow.Status.STOPPING)
    if not marked and not await is_active(workflow_id=workflow_id):
        stopped = await ChatWorkflow.objects.filter(
            pk=workflow_id, status=ChatWorkflow.Status.STOPPED
        ).aexists()
        raise CommandRefused(
            "The run has already stopped." if stopped else "Nothing is running in this workflow."
        )
    run = await durable.current(workflow_id)
    # Viewers see "stopping" at once, before the run has wound down.
    if marked and (stopping := await database_sync_to_async(stopping_record)(workflow_id)):
        await broadcast.broadcast(stopping)
    state = await durable.status(run)
    if state is not None:
        await durable.cancel(run)  # the system database first: never resumed
    await broadcast.send_control(workflow_id, {"action": "stop"})  # the task, wherever it runs
    if state in ("ENQUEUED", "DELAYED"):  # never started: no run will end it
        for stored in await database_sync_to_async(settle.run_end)(workflow_id, "stopped"):
            await broadcast.broadcast(stored)


def stopping_record(workflow_id: int) -> Envelope | None:
    """Store the "stopping" status of the workflow's current round (None when the round
    ended meanwhile: a stop that crossed the run's end says nothing)."""
    current = ChatWorkflow.objects.values_list("current_round", flat=True).get(pk=workflow_id)
    return recording.record(
        workflow_id, RunEvent(round=current, status="stopping", reason="Stop requested.")
    )


async def steer(*, workflow_id: int, text: str) -> None:
    """A note for the run's next action selection."""
    await _send(workflow_id, text, STEER_TOPIC)


async def answer(*, workflow_id: int, kind: str, value: Any) -> None:
    """Answer the question the run waits on: "extend" (more steps) or "approve"."""
    question = await database_sync_to_async(selectors.open_question)(
        workflow_id=workflow_id, kind=kind
    )
    if question is None:
        raise CommandRefused("Nothing in this workflow waits for that answer.")
    task, number, asked = question
    await _send(workflow_id, value, question_topic(kind, task, number, asked=asked))


class CommandLimited(CommandRefused):
    """Refused by the owner's commands a minute (POWERON_COMMANDS_PER_MINUTE); `retry_after`
    seconds."""

    def __init__(self, limited: rates.Limited) -> None:
        super().__init__(str(limited.refusal))
        self.retry_after = limited.retry_after


async def take_command(workflow_id: int) -> None:
    """Count a command for the workflow's owner (every interface's together); CommandLimited
    when their minute is full."""
    owners = ChatWorkflow.objects.filter(pk=workflow_id).values_list("owner_id", flat=True)
    owner = await owners.afirst()
    if owner is None:
        raise CommandRefused("This workflow was deleted.")
    limit = settings.POWERON_COMMANDS_PER_MINUTE
    try:
        await database_sync_to_async(rates.take_command)(owner, limit)
    except rates.Limited as limited:
        raise CommandLimited(limited) from None


async def _send(workflow_id: int, message: Any, topic: str) -> None:
    if not await is_active(workflow_id=workflow_id):
        raise CommandRefused("Nothing is running in this workflow.")
    await take_command(workflow_id)  # a steering note or an answer, once it can be sent
    run = await durable.current(workflow_id)
    await DBOS.send_async(run.dbos_id, message, topic)


async def is_active(*, workflow_id: int) -> bool:
    """Whether the workflow has a run in progress (in any process)."""
    return await ChatWorkflow.objects.filter(
        pk=workflow_id, status__in=ChatWorkflow.ACTIVE_STATUSES
    ).aexists()


async def wait_for(workflow_id: int, *, timeout: float = 60) -> str | None:
    """Wait until the workflow's current round has ended; its final status (tests, CLI)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        workflow = await ChatWorkflow.objects.aget(pk=workflow_id)
        if not workflow.is_active:
            return workflow.status
        await asyncio.sleep(0.05)
    return None
