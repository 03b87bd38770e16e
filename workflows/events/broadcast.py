"""Channel-layer plumbing: group names, and sending stored events to a workflow's viewers.

The layer is a best-effort doorbell, not the record: an event is broadcast only after it
is committed, a broadcast that fails is logged and left to the viewers' own catch-up
(they ask the database for what they missed), and it never fails the run that sent it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from contextlib import suppress
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer

from workflows.events import outage
from workflows.events.contract import Envelope
from workflows.events.rendering import for_staff, render_event

logger = logging.getLogger(__name__)

SEND_TIMEOUT_SECONDS = 2.0
"""A layer that does not take a message in this time is treated as down for that message."""
BATCH_MOST = 50
"""The most events of one run sent in one layer message."""


def viewers_group(workflow_id: int) -> str:
    """Every socket watching one workflow."""
    return f"workflow.{workflow_id}"


def control_group(workflow_id: int) -> str:
    """The run of one workflow, wherever it executes: stop, steer, extend, approve."""
    return f"workflow-control.{workflow_id}"


def rendered(envelope: Envelope) -> dict[str, Any]:
    """The layer message of an event: rendered once, as JSON and as HTML, for every viewer
    of every process (consumers only pick the format their viewer asked for)."""
    message = {
        "type": "workflow.event",
        "event": envelope.type,
        "seq": envelope.seq,
        "final": envelope.final,
        "json": json.dumps(envelope.as_json(), ensure_ascii=False, separators=(",", ":")),
        "html": render_event(envelope),
    }
    if for_staff(envelope):  # an error with the operator's detail: staff viewers get this one
        message["html_staff"] = render_event(envelope, staff=True)
    return message


async def broadcast(envelope: Envelope) -> bool:
    """Send a committed event (or a live frame) to the workflow's viewers; False when the
    layer did not take it (logged; viewers catch up from the database)."""
    message = rendered(envelope)
    return await _send(viewers_group(envelope.workflow), message, what=f"event {envelope.seq}")


async def broadcast_many(envelopes: list[Envelope]) -> bool:
    """Send events of one workflow, in order, in one layer message ("workflow.events", each
    event as `rendered` makes it): a layer message costs the sender and every receiving
    process several round trips to the layer, whatever it holds. False as `broadcast`."""
    if len(envelopes) == 1:
        return await broadcast(envelopes[0])
    (workflow,) = {envelope.workflow for envelope in envelopes}
    message = {"type": "workflow.events", "events": [rendered(each) for each in envelopes]}
    seqs = [each.seq for each in envelopes if each.seq is not None]
    what = f"events {seqs[0]}-{seqs[-1]}" if seqs else f"{len(envelopes)} live frames"
    return await _send(viewers_group(workflow), message, what=what)


def session_group(session_key: str) -> str:
    """Every socket opened under one sign-in session (named by a digest, never the key)."""
    return "session." + hashlib.sha256(session_key.encode()).hexdigest()[:40]


async def session_ended(session_key: str) -> bool:
    """Close the sockets of a session that signed out: they act for nobody any more."""
    return await _send(session_group(session_key), {"type": "session.ended"}, what="sign-out")


async def gone(workflow_id: int) -> bool:
    """Tell the workflow's viewers it was deleted: their sockets close as for a workflow
    that is not theirs (4404), instead of showing a live page of nothing."""
    message = {"type": "workflow.gone"}
    return await _send(viewers_group(workflow_id), message, what="deletion")


async def reassigned(workflow_id: int, owner_id: int) -> bool:
    """Tell the workflow's viewers it was given to another user (in admin): the former
    owner's sockets close (4404) and its streams end; they may not watch or steer it."""
    message = {"type": "workflow.owner", "owner": owner_id}
    return await _send(viewers_group(workflow_id), message, what="reassignment")


async def send_control(workflow_id: int, command: dict[str, Any]) -> bool:
    """Send a command to the workflow's run, in whichever process it runs (best effort: a
    stop is also recorded in the database, which the run checks)."""
    message = {"type": "run.control", **command}
    return await _send(control_group(workflow_id), message, what=str(command.get("action")))


class Sender:
    """Sends one run's events to its viewers in order, without making the run wait.

    What is queued when the layer is free goes out in one message (at most `BATCH_MOST`
    events): events stored together leave together, and a busy layer or process gets fewer,
    fuller messages instead of a backlog. A layer that is down or slow costs the run nothing:
    after a failed send the sender drops what comes for a short pause instead of waiting on
    the layer again, and viewers catch up from the database.
    """

    def __init__(self, *, capacity: int = 1_000, pause: float = 1.0) -> None:
        self._queue: asyncio.Queue[Envelope] = asyncio.Queue(capacity)
        self._pause = pause
        self._paused_until = 0.0
        self._task = asyncio.create_task(self._drain(), name="broadcast-sender")
        self.dropped = 0

    def send(self, envelope: Envelope) -> None:
        """Queue an event for the viewers; dropped (and counted) when the queue is full."""
        try:
            self._queue.put_nowait(envelope)
        except asyncio.QueueFull:
            self.dropped += 1

    async def close(self, *, timeout: float = SEND_TIMEOUT_SECONDS) -> None:
        """Let what is queued go out (for at most `timeout` seconds), then stop."""
        with suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)
        self._task.cancel()
        await asyncio.wait([self._task])  # ended, not left for a closing loop to collect
        if self.dropped:
            logger.warning("%s events were not broadcast (viewers read them stored)", self.dropped)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            while len(batch) < BATCH_MOST and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                if loop.time() < self._paused_until:
                    self.dropped += len(batch)
                elif not await broadcast_many(batch):
                    self.dropped += len(batch)
                    self._paused_until = loop.time() + self._pause
            finally:
                for _ in batch:
                    self._queue.task_done()


def channel_layer() -> BaseChannelLayer:
    """The channel layer; raises where none is configured (callers treat it as down)."""
    layer = get_channel_layer()
    if layer is None:  # said like a layer that is down, where the caller catches it
        raise RuntimeError("no channel layer is configured (CHANNEL_LAYERS)")
    return layer


async def _send(group: str, message: dict[str, Any], *, what: str) -> bool:
    try:
        await asyncio.wait_for(channel_layer().group_send(group, message), SEND_TIMEOUT_SECONDS)
    except Exception as error:  # the layer is down, slow or full; CancelledError passes
        outage.failed(f"could not send {what} to {group}", error)  # said once per outage
        return False
    outage.answered()
    return True


async def check_layer() -> bool:
    """Whether the channel layer takes a message, said in the log at start (a Redis that
    cannot be reached would otherwise show only as one warning per event later)."""
    try:
        await asyncio.wait_for(
            channel_layer().group_send("poweron.start", {"type": "start.check"}),
            SEND_TIMEOUT_SECONDS,
        )
    except Exception as error:  # noqa: BLE001 - said, and the process goes on
        logger.error(
            "The channel layer cannot be reached (%s: %s): live events will not reach viewers "
            "until it can; their pages catch up from the database every few seconds. Check "
            "REDIS_URL and that Redis runs.",
            type(error).__name__,
            error,
        )
        return False
    return True
