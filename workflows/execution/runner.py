"""Runs one round of a workflow: drives the engine, stores each event, then broadcasts it.

The database is the record: an event is committed before any viewer sees it, so a viewer
that reconnects is replayed exactly what it missed. Token deltas are the one exception:
they are broadcast as they come and stored coalesced, a few per second. A broadcast that
fails is only logged: the run goes on, and viewers catch up from the database.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from workflows.contract import Envelope
from workflows.engine.events import BaseEvent, DeltaEvent, ErrorEvent, RoundEvent
from workflows.engine.round import run_round
from workflows.live import broadcast
from workflows.models import ChatMessage, ChatWorkflow

from . import recording, settle, setup
from .controls import LiveControls
from .document_store import WorkflowDocumentStore

logger = logging.getLogger(__name__)

DELTA_FLUSH_SECONDS = 0.25
HEARTBEAT_SECONDS = 10
STOP_CHECK_SECONDS = 2
LISTEN_RETRY_SECONDS = 1.0


class RoundRunner:
    """One round of one workflow, from the user's message to a final status."""

    def __init__(
        self,
        workflow: ChatWorkflow,
        message: ChatMessage,
        *,
        on_event: Callable[[Envelope], None] | None = None,
    ) -> None:
        self.workflow = workflow
        self.message = message
        self.on_event = on_event
        """Called with each stored event after it is broadcast (the command line prints it)."""
        self.controls: LiveControls | None = None
        self.sender: broadcast.Sender | None = None
        self.deltas: dict[str, DeltaEvent] = {}
        """Text streamed since the last flush, per message key."""
        self.last_flush = 0.0

    async def execute(self) -> str:
        """Run the round; always end in a final status, also when stopped or crashed."""
        status, reason = ChatWorkflow.Status.FAILED, "The run ended unexpectedly."
        self.sender = broadcast.Sender()
        task = asyncio.current_task()
        assert task is not None
        listener = asyncio.create_task(self.listen(task))
        heartbeat = asyncio.create_task(self.beat(task))
        prepared: setup.RoundSetup | None = None
        try:
            prepared = await setup.prepare(self.workflow, self.message)
            self.controls = LiveControls(
                connections=prepared.connections, answer_timeout=prepared.answer_timeout
            )
            store = await WorkflowDocumentStore.load(self.workflow)
            async for event in run_round(
                prepared.state,
                llm=prepared.llm,
                tools=prepared.tools,
                store=store,
                controls=self.controls,
            ):
                if isinstance(event, RoundEvent) and event.status != "started":
                    status, reason = outcome(event)
                await self.emit(event)
        except asyncio.CancelledError:
            status, reason = ChatWorkflow.Status.STOPPED, ""  # settle says by whom
            raise
        except Exception as error:
            logger.exception("workflow %s failed", self.workflow.pk)
            reason = f"PowerOn failed internally ({type(error).__name__}: {error})."
            crash = ErrorEvent(round=self.message.round, kind="internal", message=reason)
            await asyncio.shield(self.emit(crash))
        finally:
            listener.cancel()
            heartbeat.cancel()
            await asyncio.shield(self.settle(status, reason))
            await asyncio.shield(self.sender.close())
            if prepared is not None:
                await asyncio.shield(setup.close_llm(prepared.llm))
        return status

    async def listen(self, run_task: asyncio.Task[Any]) -> None:
        """Receive control messages for this workflow; a stop cancels the whole round. The
        layer may fail: listen again (a stop also reaches the run through its status)."""
        layer = get_channel_layer()
        group = broadcast.control_group(self.workflow.pk)
        while True:
            channel = ""
            try:
                channel = await layer.new_channel()
                await layer.group_add(group, channel)
                while True:
                    command = await layer.receive(channel)
                    if command.get("action") == "stop":
                        run_task.cancel()
                        return
                    if self.controls is not None:
                        self.controls.handle(command)
            except Exception as error:
                logger.warning("control channel of workflow %s: %s", self.workflow.pk, error)
                await asyncio.sleep(LISTEN_RETRY_SECONDS)
            finally:
                if channel:
                    await asyncio.shield(self.leave(group, channel))

    @staticmethod
    async def leave(group: str, channel: str) -> None:
        try:
            await get_channel_layer().group_discard(group, channel)
        except Exception as error:  # the layer is down; its group entries expire
            logger.warning("could not leave %s: %s", group, error)

    async def beat(self, run_task: asyncio.Task[Any]) -> None:
        """Show the run is alive, so `settle_runs --stale-after` leaves it alone; and stop
        it when its status says "stopping" (the layer may drop the stop message)."""
        workflow = ChatWorkflow.objects.filter(pk=self.workflow.pk)
        while True:
            await workflow.aupdate(heartbeat=timezone.now())
            for _ in range(HEARTBEAT_SECONDS // STOP_CHECK_SECONDS):
                await asyncio.sleep(STOP_CHECK_SECONDS)
                if await workflow.filter(status=ChatWorkflow.Status.STOPPING).aexists():
                    run_task.cancel()
                    return

    async def emit(self, event: BaseEvent) -> None:
        """Store the event, then broadcast it (deltas: broadcast now, store coalesced)."""
        if isinstance(event, DeltaEvent):
            await self.delta(event)
            return
        await self.flush_deltas()
        self.publish(await database_sync_to_async(recording.record)(self.workflow.pk, event))

    def publish(self, stored: Envelope) -> None:
        """Send a committed event to the viewers (and the local observer)."""
        assert self.sender is not None
        self.sender.send(stored)
        if self.on_event is not None:
            self.on_event(stored)

    async def delta(self, event: DeltaEvent) -> None:
        pending = self.deltas.get(event.key)
        if pending is None:
            self.deltas[event.key] = event
        else:
            self.deltas[event.key] = pending.model_copy(update={"text": pending.text + event.text})
        assert self.sender is not None
        self.sender.send(Envelope(workflow=self.workflow.pk, seq=None, event=event))
        if time.monotonic() - self.last_flush >= DELTA_FLUSH_SECONDS:
            await self.flush_deltas()

    async def flush_deltas(self) -> None:
        """Store the text streamed since the last flush, one event per message."""
        self.last_flush = time.monotonic()
        pending, self.deltas = self.deltas, {}
        for event in pending.values():
            self.publish(await database_sync_to_async(recording.record)(self.workflow.pk, event))

    async def settle(self, status: str, reason: str) -> None:
        """Keep what was streamed, close what is open, record the final status, tell the
        viewers."""
        await self.flush_deltas()
        for stored in await database_sync_to_async(settle.run_end)(
            self.workflow.pk, status, reason
        ):
            self.publish(stored)


def outcome(round_event: RoundEvent) -> tuple[str, str]:
    """The workflow status a finished round leads to."""
    if round_event.status == "completed":
        return ChatWorkflow.Status.COMPLETED, round_event.reason
    return ChatWorkflow.Status.FAILED, round_event.reason or "The round failed."
