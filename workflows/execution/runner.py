"""Runs one round of a workflow: drives the engine, stores each event, then broadcasts it.

The database is the record: an event is committed before any viewer sees it, so a viewer
that reconnects is replayed exactly what it missed. Token deltas are the one exception:
they are broadcast as they come and stored coalesced, a few per second.
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

from . import agent, live, recording
from .documents import WorkflowDocumentStore
from .engine.round import run_round
from .models import ChatMessage, ChatWorkflow

logger = logging.getLogger(__name__)

DELTA_FLUSH_SECONDS = 0.25
HEARTBEAT_SECONDS = 10
STOP_CHECK_SECONDS = 2


class RunControls:
    """The engine's Controls: the user's answers and notes, arriving over the control group."""

    def __init__(self, *, connections: dict[str, str], answer_timeout: float) -> None:
        self._connections = connections
        self._notes: list[str] = []
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._timeout = answer_timeout

    async def _wait(self, key: str, default: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        try:
            return await asyncio.wait_for(future, self._timeout)
        except TimeoutError:
            return default
        finally:
            self._pending.pop(key, None)

    async def ask_continue(self, *, task: int, steps_done: int) -> int:
        """Wait for the user's answer to "continue for N more steps?" (0 when none comes)."""
        return int(await self._wait("extend", 0))

    async def approve(self, *, action: str, parameters: dict[str, Any]) -> bool:
        """Wait for the user to approve or reject the action (rejected when none comes)."""
        return bool(await self._wait("approve", False))

    def steering(self) -> list[str]:
        """Notes the user sent since the last action selection."""
        notes, self._notes = self._notes, []
        return notes

    def resolve_connection(self, label: str) -> str | None:
        """The owner's secret for a connection label; never leaves the run."""
        return self._connections.get(label)

    def handle(self, command: dict[str, Any]) -> None:
        """Apply one control message (stop is handled by the run itself)."""
        match command.get("action"):
            case "steer":
                self._notes.append(str(command["text"]))
            case "extend":
                self._answer("extend", int(command["steps"]))
            case "approve":
                self._answer("approve", bool(command["approved"]))

    def _answer(self, key: str, value: Any) -> None:
        future = self._pending.get(key)
        if future is not None and not future.done():
            future.set_result(value)


class WorkflowRun:
    """One round of one workflow, from the user's message to a final status."""

    def __init__(
        self,
        workflow: ChatWorkflow,
        message: ChatMessage,
        *,
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.workflow = workflow
        self.message = message
        self.on_event = on_event
        """Called with each stored event after it is broadcast (the command line prints it)."""
        self.deltas: dict[str, dict[str, Any]] = {}
        """Text streamed since the last flush, per message key."""
        self.streaming: dict[str, dict[str, Any]] = {}
        """Messages being streamed and not yet complete: kept as partial answers on a stop."""
        self.last_flush = 0.0

    async def execute(self) -> str:
        """Run the round; always end in a final status, also when stopped or crashed."""
        status, reason = ChatWorkflow.Status.FAILED, "The run ended unexpectedly."
        task = asyncio.current_task()
        assert task is not None
        listener = asyncio.create_task(self.listen(task))
        heartbeat = asyncio.create_task(self.beat(task))
        setup: agent.RunSetup | None = None
        try:
            setup = await agent.prepare(self.workflow, self.message)
            self.controls = RunControls(
                connections=setup.connections, answer_timeout=setup.answer_timeout
            )
            store = await WorkflowDocumentStore.load(self.workflow)
            await self.emit(setup.user_message_event)
            async for event in run_round(
                setup.state, llm=setup.llm, tools=setup.tools, store=store, controls=self.controls
            ):
                data = event.model_dump(mode="json")
                if data["type"] == "round" and data["status"] != "started":
                    status, reason = outcome(data)
                await self.emit(data)
        except asyncio.CancelledError:
            status, reason = ChatWorkflow.Status.STOPPED, ""  # settle says by whom
            raise
        except Exception as error:
            logger.exception("workflow %s failed", self.workflow.pk)
            reason = f"{type(error).__name__}: {error}"
            crash = {"type": "error", "round": self.message.round, "kind": "internal"}
            await asyncio.shield(self.emit({**crash, "message": reason}))
        finally:
            listener.cancel()
            heartbeat.cancel()
            await asyncio.shield(self.settle(status, reason))
            if setup is not None:
                await asyncio.shield(agent.close_llm(setup.llm))
        return status

    async def listen(self, run_task: asyncio.Task[Any]) -> None:
        """Receive control messages for this workflow; a stop cancels the whole round."""
        layer = get_channel_layer()
        channel = await layer.new_channel()
        group = live.control_group(self.workflow.pk)
        await layer.group_add(group, channel)
        try:
            while True:
                command = await layer.receive(channel)
                if command.get("action") == "stop":
                    run_task.cancel()
                    return
                if hasattr(self, "controls"):
                    self.controls.handle(command)
        finally:
            await asyncio.shield(layer.group_discard(group, channel))

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

    async def emit(self, event: dict[str, Any]) -> None:
        """Store the event, then broadcast it (deltas: broadcast now, store coalesced)."""
        if event["type"] == "delta":
            await self.delta(event)
            return
        await self.flush_deltas()
        if event["type"] == "message":
            self.streaming.pop(event.get("key", ""), None)
        await self.publish(await database_sync_to_async(recording.record)(self.workflow.pk, event))

    async def publish(self, stored: dict[str, Any]) -> None:
        """Send a committed event to the viewers (and the local observer)."""
        await live.broadcast(self.workflow.pk, stored)
        if self.on_event is not None:
            self.on_event(stored)

    async def delta(self, event: dict[str, Any]) -> None:
        key = event["key"]
        pending = self.deltas.setdefault(key, {**event, "text": "", "offset": event["offset"]})
        pending["text"] += event["text"]
        streamed = self.streaming.setdefault(key, {"round": event["round"], "text": ""})
        streamed["text"] += event["text"]
        await live.broadcast(self.workflow.pk, {**live_shape(event), "seq": None})
        if time.monotonic() - self.last_flush >= DELTA_FLUSH_SECONDS:
            await self.flush_deltas()

    async def flush_deltas(self) -> None:
        """Store the text streamed since the last flush, one event per message."""
        self.last_flush = time.monotonic()
        pending, self.deltas = self.deltas, {}
        for event in pending.values():
            await self.publish(
                await database_sync_to_async(recording.record)(self.workflow.pk, event)
            )

    async def settle(self, status: str, reason: str) -> None:
        """Keep what was streamed, record the final status and tell the viewers."""
        await self.flush_deltas()
        for key, partial in list(self.streaming.items()):  # an answer cut off mid-stream
            await self.emit(
                {
                    "type": "message",
                    "round": partial["round"],
                    "key": key,
                    "role": "assistant",
                    "content": partial["text"],
                    "status": status,
                }
            )
        await self.publish(
            await database_sync_to_async(recording.settle)(self.workflow.pk, status, reason)
        )


def outcome(round_event: dict[str, Any]) -> tuple[str, str]:
    """The workflow status a finished round leads to."""
    if round_event["status"] == "completed":
        return ChatWorkflow.Status.COMPLETED, round_event.get("reason", "")
    return ChatWorkflow.Status.FAILED, round_event.get("reason") or "The round failed."


def live_shape(event: dict[str, Any]) -> dict[str, Any]:
    """An unstored delta in the public event shape."""
    payload = {k: v for k, v in event.items() if k not in {"type", "round", "task", "action"}}
    return {
        "type": "delta",
        "round": event.get("round", 0),
        "task": event.get("task", 0),
        "action": event.get("action", 0),
        "payload": payload,
    }
