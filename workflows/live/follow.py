"""Following a workflow's events from a seq: every stored event after it, in order, then the
live ones from the channel layer, each exactly once.

The database is the record and the layer a best-effort doorbell, so a reader's order is kept
here, once, for every kind of reader: the page's socket (`live.consumer`), and programs
reading a `Feed` (`live.feed`: the HTTP API's event stream, the OpenAI-compatible endpoint).
Subscribe before replaying: what is stored meanwhile also arrives live and is dropped by its
seq. A gap in the seqs is filled from the database at once; after a silence while a run may
be going the reader asks the database what the layer did not bring.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from workflows import selectors
from workflows.events.contract import Envelope
from workflows.events.rendering import render_event
from workflows.models import ChatWorkflow

from .turns import replay_turn

REPLAY_BATCH = 500
"""Events read from the database at once: a replay further behind is read in pages."""
IDLE_CATCH_UP_FACTOR = 8
"""With no run believed going, the database is asked this many times less often."""
CATCH_UP_GRACE_SECONDS = 0.5
"""How long events the database has and this reader has not are given to arrive by
themselves before they are replayed from the database."""
LIVE_TYPES = ("workflow.event", "workflow.events")  # the layer messages carrying events


@database_sync_to_async
def stored_last_seq(workflow_id: int) -> int | None:
    return ChatWorkflow.objects.filter(pk=workflow_id).values_list("last_seq", flat=True).first()


YIELD_SECONDS = 0.005
"""Sending for this long lets the process's other work run (stored events render on the loop)."""
PAGE_READ = 100
"""Stored events a paged replay reads at once (the reads share a thread with requests)."""


@database_sync_to_async
def stored_events(
    workflow_id: int, after: int, upto: int | None, most: int = REPLAY_BATCH
) -> list[Envelope]:
    events = selectors.event_list_after(workflow_id=workflow_id, after_seq=after)
    if upto is not None:
        events = events.filter(seq__lte=upto)
    return [Envelope.from_row(event) for event in events[:most]]


def compact(data: dict[str, Any]) -> str:
    """An event's JSON text as the layer carries it."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


class Frame:
    """One event for a reader: stored (read from the database) or live (a layer message,
    rendered once by the process that stored it). Its JSON text, HTML fragment and typed
    envelope are made when first asked for."""

    __slots__ = ("_envelope", "_message", "final", "seq", "type")

    def __init__(
        self,
        *,
        seq: int | None,
        final: bool,
        type: str,
        envelope: Envelope | None = None,
        message: dict[str, Any] | None = None,
    ) -> None:
        self.seq = seq
        self.final = final
        self.type = type
        self._envelope = envelope
        self._message = message

    @classmethod
    def stored(cls, envelope: Envelope) -> Frame:
        """A frame of an event read from the database."""
        return cls(seq=envelope.seq, final=envelope.final, type=envelope.type, envelope=envelope)

    @classmethod
    def live(cls, message: dict[str, Any]) -> Frame:
        """A frame of one event of a layer message (`broadcast.rendered`)."""
        kind = message.get("event") or json.loads(message["json"])["type"]
        return cls(seq=message["seq"], final=message["final"], type=kind, message=message)

    @property
    def json(self) -> str:
        """The event's JSON text (the socket's `format=json`)."""
        if self._message is not None:
            return str(self._message["json"])
        assert self._envelope is not None
        return compact(self._envelope.as_json())

    def html_for(self, *, staff: bool) -> str:
        """The event's HTML fragment for this viewer: a staff member's shows the operator's
        detail an error may carry."""
        if self._message is not None:
            return str(self._message.get("html_staff" if staff else "html", self._message["html"]))
        assert self._envelope is not None
        return render_event(self._envelope, staff=staff)

    @property
    def envelope(self) -> Envelope:
        """The typed event."""
        if self._envelope is None:
            assert self._message is not None
            self._envelope = Envelope.from_json(json.loads(self._message["json"]))
        return self._envelope


class Follower:
    """One reader's place in a workflow's events: `send` gets every event after `last_seq`
    once, in seq order (live frames without a seq in the order they come).

    Feed it the layer's messages with `take`; run `catch_up` beside it; `replay` and
    `rewind` read the database. `behind_most`: a reader that many events behind a live
    event is let go (`take` answers False) instead of replayed inline; None replays it in
    pages. `page`: `next_page` sends at most that many stored events, then calls `more`
    with the seq to ask after for the next page (None: every stored event at once).
    """

    def __init__(
        self,
        workflow_id: int,
        last_seq: int,
        send: Callable[[Frame], Awaitable[None]],
        *,
        behind_most: int | None = None,
        page: int | None = None,
        more: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        self.workflow_id = workflow_id
        self.last_seq = last_seq
        self.send = send
        self.behind_most = behind_most
        self.page = page
        self.more = more
        self.ordered = asyncio.Lock()
        """Held while events are sent, so a live event and a catch-up never interleave."""
        self.heard = time.monotonic()
        self.settled = False
        """Whether the last stored event sent was a run's final status."""
        self.paging = False
        """Whether a paged replay has not reached the stored end (live events wait)."""
        self.yielded = time.monotonic()

    async def deliver(self, frame: Frame) -> None:
        """Send one frame and note where the reader is (held: `ordered`)."""
        if frame.seq is not None:
            self.last_seq = max(self.last_seq, frame.seq)
            self.settled = frame.final
        await self.send(frame)
        if time.monotonic() - self.yielded > YIELD_SECONDS:
            await asyncio.sleep(0)
            self.yielded = time.monotonic()

    async def replay(self, *, upto: int | None = None) -> None:
        """Send every stored event after last_seq (up to `upto`), in order, a page at a time
        (held: `ordered`)."""
        while True:
            batch = await stored_events(self.workflow_id, self.last_seq, upto)
            for envelope in batch:
                await self.deliver(Frame.stored(envelope))
            if len(batch) < REPLAY_BATCH:
                return

    async def next_page(self) -> None:
        """Send the stored events after last_seq, a page when paged (held: `ordered`)."""
        if self.page is None:
            await self.replay()
            return
        if await self.replay_page(self.page) and self.more is not None:
            await self.more(self.last_seq)

    async def replay_page(self, most: int) -> bool:
        """Send at most `most` stored events after last_seq, in order; whether more are
        stored after them (held: `ordered`). Until a page reaches the stored end the reader
        is `paging`: live events and catch-ups leave it to the next page."""
        left = most
        async with replay_turn():
            while True:
                want = min(left, PAGE_READ)
                batch = await stored_events(self.workflow_id, self.last_seq, None, want + 1)
                for envelope in batch[:want]:
                    await self.deliver(Frame.stored(envelope))
                if len(batch) <= want:  # the stored end
                    self.paging = False
                    return False
                left -= want
                if left == 0:
                    self.paging = True
                    return True

    async def rewind(self, after: int) -> None:
        """Send again what came after `after` (at most up to what is stored)."""
        stored = await stored_last_seq(self.workflow_id) or 0
        async with self.ordered:
            self.last_seq = min(after, stored)
            await self.replay()

    async def catch_up(self) -> None:
        """Ask the database for stored events the layer did not bring: every few seconds of
        silence while a run may be going, less often once the run has ended. Runs until
        cancelled."""
        interval = float(settings.POWERON_CATCH_UP_SECONDS)
        while True:
            quiet = interval * (IDLE_CATCH_UP_FACTOR if self.settled else 1)
            await asyncio.sleep(max(0.05, quiet - (time.monotonic() - self.heard)))
            if time.monotonic() - self.heard < quiet:
                continue
            self.heard = time.monotonic()
            if self.paging:  # the reader asks for its pages
                continue
            stored = await stored_last_seq(self.workflow_id)
            if stored is None or stored <= self.last_seq:
                continue
            # Those events may be on their way: replay only what has not come by itself.
            await asyncio.sleep(CATCH_UP_GRACE_SECONDS)
            if self.page is not None and stored - self.last_seq > self.page:
                async with self.ordered:
                    await self.next_page()
            elif stored > self.last_seq:
                # Read before taking the lock: live events go on while the database answers
                # (in a busy process that can take a while), and what they brought is skipped.
                missed = await stored_events(self.workflow_id, self.last_seq, stored)
                async with self.ordered:
                    for envelope in missed:
                        if envelope.seq is not None and envelope.seq > self.last_seq:
                            await self.deliver(Frame.stored(envelope))
                    if len(missed) == REPLAY_BATCH:
                        await self.replay(upto=stored)

    async def take(self, message: dict[str, Any]) -> bool:
        """A layer message with live events (one, or a run's batch in order): each sent in
        order once; False when the reader fell `behind_most` behind (it is let go)."""
        self.heard = time.monotonic()
        events = message["events"] if message["type"] == "workflow.events" else [message]
        async with self.ordered:
            for event in events:
                if not await self.relay(event):
                    return False
        return True

    async def relay(self, event: dict[str, Any]) -> bool:
        """Send one live event in order (held: `ordered`)."""
        seq = event["seq"]
        if self.paging:  # its page brings it (an unstored frame: the stored text)
            return True
        if seq is not None:
            if seq <= self.last_seq:
                return True
            if self.behind_most is not None and seq - self.last_seq > self.behind_most:
                return False
            if seq > self.last_seq + 1:  # the layer dropped something: the database has it
                await self.replay(upto=seq - 1)
            self.last_seq, self.settled = seq, event["final"]
        await self.send(Frame.live(event))
        return True
