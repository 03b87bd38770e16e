"""A round's streamed answers: each piece sent live in frames at a human rate, and stored
coalesced, a few times a second (a viewer that missed a frame gets the text from those).

A frame carries its offset in the message, and each piece its attempt: a new attempt (an
answer streamed again after a crash) starts the text afresh.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from workflows.engine.records.events import DeltaEvent
from workflows.events.contract import Envelope

FRAME_SECONDS = 0.08
"""Live text of a streamed answer is sent at most this often per message."""
DELTA_FLUSH_SECONDS = 0.5
"""...and stored at most this often."""


class Deltas:
    """The text of the messages a round is streaming: per message, what is not yet sent
    (sent as one frame at most every FRAME_SECONDS) and what is not yet stored (taken to be
    stored at most every DELTA_FLUSH_SECONDS)."""

    def __init__(self, workflow_id: int, send: Callable[[Envelope], None]) -> None:
        self.workflow_id = workflow_id
        self.send = send
        """Sends a live frame to the viewers (never stored)."""
        self.frames: dict[str, DeltaEvent] = {}
        """Streamed text not yet sent, per message key."""
        self.unstored: dict[str, DeltaEvent] = {}
        """Streamed text not yet stored, per message key."""
        self.frame_timer: asyncio.TimerHandle | None = None
        self.last_flush = 0.0

    def add(self, piece: DeltaEvent) -> bool:
        """Take a piece of a message (its frame is sent shortly); whether the text streamed
        is due to be stored."""
        self.frames[piece.key] = joined(self.frames.get(piece.key), piece)
        self.unstored[piece.key] = joined(self.unstored.get(piece.key), piece)
        if self.frame_timer is None:
            loop = asyncio.get_running_loop()
            self.frame_timer = loop.call_later(FRAME_SECONDS, self.send_frames)
        return time.monotonic() - self.last_flush >= DELTA_FLUSH_SECONDS

    def send_frames(self) -> None:
        """Send the text streamed since the last frame, one frame per message."""
        if self.frame_timer is not None:
            self.frame_timer.cancel()
            self.frame_timer = None
        frames, self.frames = self.frames, {}
        for frame in frames.values():
            self.send(Envelope(workflow=self.workflow_id, seq=None, event=frame))

    def take(self) -> list[DeltaEvent]:
        """Send what is framed; the text streamed since the last take, one event per message,
        to be stored."""
        self.send_frames()
        self.last_flush = time.monotonic()
        unstored, self.unstored = self.unstored, {}
        return list(unstored.values())


def joined(pending: DeltaEvent | None, piece: DeltaEvent) -> DeltaEvent:
    """A piece added to the text pending for its message (a new attempt starts afresh)."""
    if pending is None or pending.attempt != piece.attempt:
        return piece
    return pending.model_copy(update={"text": pending.text + piece.text})
