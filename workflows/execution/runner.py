"""Runs one round of a workflow as a durable DBOS workflow: drives the engine, stores each
event, then broadcasts it.

The database is the record: an event is committed before any viewer sees it. The events the
engine yields between two waits on the model, a tool or the user arrive together; they are
stored together, in one transaction, before the next wait begins, then broadcast. Each event
the round emits has a deterministic ordinal, and storing is insert-if-absent on it, so a
round resumed after a crash replays its history without storing or broadcasting it twice.
The streamed answer is broadcast live from inside its step (with an attempt marker) and
stored coalesced, a few times a second (`streaming`); the round beats and watches for its
stop beside it (`liveness`). A broadcast that fails is only logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from channels.db import database_sync_to_async
from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync
from dbos import error as dbos_error

from workflows import selectors
from workflows.engine.loop.round import run_round
from workflows.engine.records.events import (
    DeltaEvent,
    ErrorEvent,
    RoundEvent,
    StatusEvent,
)
from workflows.engine.records.state import RoundState
from workflows.events import broadcast
from workflows.events.contract import AnyEvent, Envelope, FinalStatus, RunEvent
from workflows.models import ChatMessage, ChatWorkflow

from . import durable, recording, settle, setup
from .checkpoints import Checkpoints, DurableControls, DurableLLM, DurableStore, DurableTools
from .liveness import Liveness
from .streaming import Deltas

logger = logging.getLogger(__name__)

OBSERVERS: dict[int, Callable[[Envelope], None]] = {}
"""Per workflow, a function called with each stored event (the command line prints them)."""


FOREIGN = "not this database's round"
"""What a run recovered from another app database's run state returns, having done nothing."""


@DBOS.workflow(name="poweron.round")
async def round_workflow(workflow_id: int, message_id: int) -> str:
    """One round of a workflow, durable: recovered from its last completed step. A run that
    is not this app database's current round of the workflow touches nothing here."""
    dbos_id = DBOS.workflow_id or ""
    if not await database_sync_to_async(durable.belongs_here)(dbos_id, workflow_id, message_id):
        logger.warning("run %s is not a round of this app database: left alone", dbos_id)
        return FOREIGN
    return await RoundRunner(workflow_id, message_id).execute()


async def start(run: durable.RunRef, message_id: int, *, queued: bool) -> WorkflowHandleAsync[str]:
    """Run a round durably: in this process, or on the queue for `run_workers` processes."""
    with SetWorkflowID(run.dbos_id):
        if queued:
            return await DBOS.enqueue_workflow_async(
                durable.rounds_queue(), round_workflow, run.workflow_id, message_id
            )
        return await DBOS.start_workflow_async(round_workflow, run.workflow_id, message_id)


class RoundRunner:
    """One round of one workflow, from the user's message to a final status."""

    def __init__(
        self,
        workflow_id: int,
        message_id: int,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.message_id = message_id
        self.on_event = on_event or OBSERVERS.get(workflow_id)
        """Called with each stored event (the command line prints it)."""
        self.ordinal = 0
        """How many events this round has emitted: the key of insert-if-absent."""
        self.pending: list[recording.Pending] = []
        """Events emitted since the last wait, not yet stored."""
        self.checkpoints = Checkpoints(before=self.store)
        self.sender: broadcast.Sender | None = None
        self.deltas = Deltas(workflow_id, self.send_live)
        """The answers being streamed: sent in frames, stored coalesced."""
        self.liveness = Liveness(workflow_id, self.stop)
        self.stopped = False
        self.parts: setup.RoundParts | None = None

    async def execute(self) -> str:
        """Run the round; always end in a final status, unless handed back to the queue."""
        status: FinalStatus = "failed"
        reason = "The run ended unexpectedly."
        task = asyncio.current_task()
        assert task is not None
        dbos_id = DBOS.workflow_id or ""
        self.task = task
        durable.RUNNERS[dbos_id] = self
        self.sender = broadcast.Sender()
        self.liveness.start()
        handed_back = False
        try:
            workflow, message = await self.load()
            logger.info("running round %s of workflow %s", message.round, self.workflow_id)
            await self.begin(workflow)
            prepared = await self.checkpoints.step(
                "round.prepare", lambda: setup.prepare(workflow, message)
            )
            state = RoundState.model_validate(prepared)
            self.parts = parts = await setup.build(workflow)
            hidden = await database_sync_to_async(selectors.rounds_hidden)(message=message)
            store = DurableStore(workflow, self.checkpoints, hidden=hidden)
            await store.load()
            controls = DurableControls(
                self.checkpoints, connections=parts.connections, answer_timeout=parts.answer_timeout
            )
            llm = DurableLLM(parts.llm, self.checkpoints, self.piece)
            async for event in run_round(
                state,
                llm=llm,
                tools=DurableTools(parts.tools, self.checkpoints),
                store=store,
                controls=controls,
                clock=self.checkpoints.clock,
            ):
                if isinstance(event, RoundEvent) and event.status != "started":
                    status, reason = outcome(event)
                self.emit(event)
            if unread := await controls.steering():  # came after the last choice of action
                self.emit(StatusEvent(round=self.round, code="info", reason=unused_notes(unread)))
            await self.store()
        except (asyncio.CancelledError, dbos_error.DBOSWorkflowCancelledError):
            # Decided before any await: a second cancellation may interrupt what follows.
            status, reason = "stopped", ""  # settle says by whom
            handed_back = durable.shutting_down and not self.stopped
            if handed_back:  # still pending in DBOS: another worker resumes it
                await asyncio.shield(self.hand_back())
            else:  # a stop: cancelled in the system database too, so nothing resumes it
                await asyncio.shield(DBOS.cancel_workflow_async(dbos_id))
            raise
        except dbos_error.DBOSWorkflowConflictIDError:
            handed_back = True  # another process took the round over: it ends it
            raise
        except Exception as error:
            logger.exception("workflow %s failed", self.workflow_id)
            reason = f"PowerOn failed internally ({type(error).__name__}: {error})."
            crash = ErrorEvent(round=self.round, kind="internal", message=reason)
            self.emit(crash)  # stored by finish()
        finally:
            self.liveness.cancel()
            durable.RUNNERS.pop(dbos_id, None)
            # Shielded as one: a second cancellation cannot cut the ending short.
            await asyncio.shield(self.finish(status, reason, settle=not handed_back))
        return status

    def stop(self) -> None:
        """Cancel the round's task, once (a stop may arrive by several ways)."""
        if not self.stopped:
            self.stopped = True
            self.task.cancel()

    async def finish(self, status: FinalStatus, reason: str, *, settle: bool) -> None:
        """Store what the round emitted last, record how it ended (unless it was handed on)
        and send what is queued."""
        try:
            try:
                await self.flush_deltas()  # also when handed on: it happened
            finally:
                if settle:
                    await self.settle(status, reason)
        finally:
            assert self.sender is not None
            await self.sender.close()
            if self.parts is not None:
                await setup.close_parts(self.parts)

    @property
    def round(self) -> int:
        return self.message.round if hasattr(self, "message") else 0

    async def load(self) -> tuple[ChatWorkflow, ChatMessage]:
        message = await ChatMessage.objects.select_related("workflow__owner").aget(
            pk=self.message_id, workflow_id=self.workflow_id
        )
        self.message = message
        return message.workflow, message

    async def begin(self, workflow: ChatWorkflow) -> None:
        """Mark the round running; say so when it waited in the queue or is resumed."""
        rows = ChatWorkflow.objects.filter(pk=self.workflow_id)
        was_queued = await rows.filter(status=ChatWorkflow.Status.QUEUED).aupdate(
            status=ChatWorkflow.Status.RUNNING
        )
        first = []

        async def begin() -> bool:  # runs only the first time: a replay returns its record
            first.append(True)
            return True

        await self.checkpoints.step("round.begin", begin)
        if not first:
            why = "Resumed after an interruption."
            await self.record(RunEvent(round=self.round, status="running", reason=why))
        elif was_queued:
            why = "A worker took the run."
            await self.record(RunEvent(round=self.round, status="running", reason=why))

    async def hand_back(self) -> None:
        """A stopping worker leaves the round to another: viewers see it wait again."""
        await ChatWorkflow.objects.filter(pk=self.workflow_id).aupdate(
            status=ChatWorkflow.Status.QUEUED
        )
        why = "The worker stopped; the run waits for another worker and resumes where it was."
        await self.record(RunEvent(round=self.round, status="queued", reason=why))

    def emit(self, event: AnyEvent) -> None:
        """Queue the event to be stored once (by its ordinal) before the round next waits,
        then broadcast. The engine's deltas are dropped: the streaming step already sent and
        stored the pieces."""
        if isinstance(event, DeltaEvent):
            return
        self.queue_deltas()
        self.ordinal += 1
        self.pending.append((event, self.ordinal))

    async def record(self, event: AnyEvent) -> None:
        """Store an event of the host's own now (after what is pending), then broadcast it."""
        self.pending.append((event, None))
        await self.store()

    async def store(self) -> None:
        """Store the pending events in one transaction, then broadcast those newly stored
        (None: stored before this round was resumed). Called before every wait."""
        if not self.pending:
            return
        batch, self.pending = self.pending, []
        for stored in await database_sync_to_async(recording.record_many)(self.workflow_id, batch):
            self.publish(stored)

    def publish(self, stored: Envelope) -> None:
        """Send a committed event to the viewers (and the local observer)."""
        self.send_live(stored)
        if self.on_event is not None:
            self.on_event(stored)

    def send_live(self, envelope: Envelope) -> None:
        """Send an event to the viewers (a stored one, or a live frame of an answer)."""
        assert self.sender is not None
        self.sender.send(envelope)

    async def piece(self, key: str, text: str, offset: int, attempt: str) -> None:
        """A live piece of a streamed message (called inside its step): sent in frames, and
        stored with what is pending when a flush is due."""
        event = DeltaEvent(round=self.round, key=key, text=text, offset=offset, attempt=attempt)
        if self.deltas.add(event):
            await self.flush_deltas()

    def queue_deltas(self) -> None:
        """Send what is framed, then queue the text streamed since the last flush to be
        stored, one event per message."""
        self.pending += [(event, None) for event in self.deltas.take()]

    async def flush_deltas(self) -> None:
        """Store what is streamed and what is pending, now."""
        self.queue_deltas()
        await self.store()

    async def settle(self, status: FinalStatus, reason: str) -> None:
        """Close what is open, record the final status (once), tell the viewers."""
        for stored in await database_sync_to_async(settle.run_end)(
            self.workflow_id, status, reason
        ):
            self.publish(stored)


def unused_notes(notes: list[str]) -> str:
    """Steering notes that came after the agent's last choice of action, said as unused (the
    user was told the agent reads a note before it chooses its next action)."""
    quoted = "; ".join(f"“{note[:200]}{'…' if len(note) > 200 else ''}”" for note in notes)
    kind = "A steering note" if len(notes) == 1 else f"{len(notes)} steering notes"
    return f"{kind} came after the agent's last choice of action and was not used: {quoted}."


def outcome(round_event: RoundEvent) -> tuple[FinalStatus, str]:
    """The workflow status a finished round leads to."""
    if round_event.status == "completed":
        return "completed", round_event.reason
    return "failed", round_event.reason or "The round failed."
