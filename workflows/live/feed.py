"""A workflow's events for a reader that is not a socket (the HTTP API's event stream, the
OpenAI-compatible endpoint, AG-UI, the MCP server's follow): a `Follower` on a channel of
the layer of its own, read as an async iterator of `Frame`s.

Through a channel-layer outage it waits, quietly, as a socket does (`live.layer`): a failed
receive, join or leave is said once per outage (`events.outage`), the follower's catch-up
keeps reading the database meanwhile, and once the layer answers again the feed joins its
group again and live events resume, in seq order, each once. (A failing receive ended the
feed with a logged exception, and the HTTP stream with it.)
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import logging
from typing import Any

from workflows.events import broadcast, outage

from .follow import LIVE_TYPES, Follower, Frame, stored_last_seq

logger = logging.getLogger(__name__)

RETRY_SECONDS = 1.0
"""How often a feed tries the layer again during an outage."""


class FeedEnded(Exception):
    """The feed has nothing more to give: the workflow was deleted (or reassigned)."""


class _End(enum.Enum):
    """The mark a feed's queue ends with."""

    END = enum.auto()


_END = _End.END


class Feed:
    """A workflow's events from a seq for a reader that is not a socket (an HTTP stream, a
    round's answer): what `Follower` gives, on a channel of the layer of its own, as an
    async iterator of `Frame`s (or `await feed.get(timeout)`). It ends when the workflow is
    deleted. Memory stays bounded: a reader far behind is replayed from the database a page
    at a time as it reads, and while it does not read, live events wait in its channel on
    the layer (which drops what exceeds its capacity; the database fills the gap later).

        async with Feed(workflow_id, after=seq) as feed:
            async for frame in feed:
                ...
    """

    def __init__(self, workflow_id: int, *, after: int = 0, backlog: int = 64) -> None:
        self.workflow_id = workflow_id
        self.after = max(0, after)
        self._frames: asyncio.Queue[Frame | _End] = asyncio.Queue(backlog)
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    async def __aenter__(self) -> Feed:
        self.layer = broadcast.channel_layer()
        self.channel = await self.layer.new_channel()
        self.group = broadcast.viewers_group(self.workflow_id)
        self.joined = await self._join()
        self.follower = Follower(self.workflow_id, self.after, self._frames.put)
        # Its own context: the reads go where the sockets' go, not to the executor of the
        # request that opened the feed (one thread and one database connection per request).
        self._task = asyncio.get_running_loop().create_task(
            self._deliver(), context=contextvars.Context()
        )
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
        try:
            await self.layer.group_discard(self.group, self.channel)
        except Exception as error:  # the group forgets it by itself (its expiry)
            outage.failed(f"could not leave {self.group}", error)

    async def _join(self) -> bool:
        """Join the workflow's viewers; whether the layer answered (a failure is said once
        per outage)."""
        try:
            await self.layer.group_add(self.group, self.channel)
        except Exception as error:
            outage.failed(f"could not join {self.group}", error)
            return False
        return True

    async def _receive(self) -> dict[str, Any]:
        """The next message of the feed's channel; while the layer fails, none: tried again
        every RETRY_SECONDS, the group joined again once it answers (a restarted Redis forgot
        it). The follower's catch-up reads the database meanwhile."""
        while True:
            if not self.joined:
                await asyncio.sleep(RETRY_SECONDS)
                if not await self._join():
                    continue
                self.joined = True
                outage.answered()
            try:
                return dict(await self.layer.receive(self.channel))
            except Exception as error:  # the layer is down; CancelledError passes
                outage.failed("a feed's channel", error)
                self.joined = False

    @property
    def last_seq(self) -> int:
        """The seq of the last stored event handed to the reader's queue."""
        return self.follower.last_seq

    async def _deliver(self) -> None:
        catching: asyncio.Task[None] | None = None
        try:
            # Past the end counts as the end: a seq the workflow has not reached yet would
            # make every later event look old.
            stored = await stored_last_seq(self.workflow_id) or 0
            async with self.follower.ordered:
                self.follower.last_seq = min(self.follower.last_seq, stored)
                await self.follower.replay()
            catching = asyncio.create_task(self.follower.catch_up())
            while True:
                message = await self._receive()
                if message.get("type") in LIVE_TYPES:
                    await self.follower.take(message)
                elif message.get("type") in ("workflow.gone", "workflow.owner"):
                    break  # deleted, or given to another user: not this reader's any more
        except Exception as error:  # said to the reader at its next read; CancelledError passes
            logger.exception("the feed of workflow %s failed", self.workflow_id)
            self._failure = error
        finally:
            if catching is not None:
                catching.cancel()
        await self._frames.put(_END)

    async def get(self, timeout: float | None = None) -> Frame | None:
        """The next frame, or None when none came within `timeout` seconds. Raises
        FeedEnded when the workflow was deleted (or what failed, when reading failed)."""
        try:
            item = await asyncio.wait_for(self._frames.get(), timeout)
        except TimeoutError:
            return None
        if item is _END:
            self._frames.put_nowait(_END)  # every later read ends too
            if self._failure is not None:
                raise self._failure
            raise FeedEnded(f"workflow {self.workflow_id} was deleted or reassigned")
        return item

    def waiting(self, most: int) -> list[Frame]:
        """The frames already waiting, at most `most`, without waiting for more (the feed's
        end stays for the next `get`): a reader that writes several at once writes less."""
        frames: list[Frame] = []
        while len(frames) < most and not self._frames.empty():
            item = self._frames.get_nowait()
            if item is _END:
                self._frames.put_nowait(_END)
                break
            frames.append(item)
        return frames

    def __aiter__(self) -> Feed:
        return self

    async def __anext__(self) -> Frame:
        try:
            frame = await self.get()
        except FeedEnded:
            raise StopAsyncIteration from None
        assert frame is not None
        return frame
