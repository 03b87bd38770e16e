"""A socket's side of the channel layer through an outage: it waits, quietly.

Channels' consumer lets a failing layer receive end the consumer (the socket closes with
1011, Daphne logs a traceback, the page reconnects into the same failure): during a 5 s Redis
cut, 70 viewers reconnected 356 times and one process logged 769 tracebacks. Here a failed
receive, join or leave is said once per outage (`events.outage`); the socket stays open and
its `Follower` keeps asking the database for what the layer does not bring, and once the
layer answers again the socket joins its groups again (a restarted Redis forgot them) and
live events resume, ordered by seq.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from channels.utils import await_many_dispatch

from workflows.events import outage

RETRY_SECONDS = 1.0
"""How often a socket tries the layer again during an outage."""


class SteadyLayerConsumer(AsyncJsonWebsocketConsumer):
    """A JSON WebSocket consumer whose groups (`joined`) survive a layer outage."""

    joined: tuple[str, ...] = ()
    """The groups this socket belongs to (set by the consumer as it joins them)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Channels' own dispatch, with a layer receive that waits out an outage."""
        self.scope = scope
        # None where no layer is configured, as in Channels' own (its stub says otherwise).
        self.channel_layer = get_channel_layer(self.channel_layer_alias)  # type: ignore[assignment]
        self.base_send = send
        self.rejoining: asyncio.Task[None] | None = None
        sources = [receive]
        if self.channel_layer is not None:
            self.channel_name = await self.channel_layer.new_channel()
            sources.append(self.layer_receive)
        try:
            await await_many_dispatch(sources, self.dispatch)
        except StopConsumer:
            pass
        finally:
            if self.rejoining is not None:
                self.rejoining.cancel()

    async def layer_receive(self) -> dict[str, Any]:
        """The next message of this socket's channel; while the layer fails, none (tried
        again every RETRY_SECONDS, and the groups joined again once it answers)."""
        while True:
            try:
                return dict(await self.channel_layer.receive(self.channel_name))
            except Exception as error:  # the layer is down; CancelledError passes
                outage.failed("a viewer's channel", error)
                self.rejoin()
                await asyncio.sleep(RETRY_SECONDS)

    async def join(self, group: str) -> None:
        """Join a group; a layer that is down is said once and the group joined later."""
        self.joined = (*self.joined, group)
        try:
            await self.channel_layer.group_add(group, self.channel_name)
        except Exception as error:
            outage.failed(f"could not join {group}", error)
            self.rejoin()

    async def leave_all(self) -> None:
        """Leave every group joined; a layer that is down forgets them by their expiry."""
        for group in self.joined:
            try:
                await self.channel_layer.group_discard(group, self.channel_name)
            except Exception as error:
                outage.failed(f"could not leave {group}", error)

    def rejoin(self) -> None:
        """Join the groups again once the layer answers (in the background, once)."""
        if self.rejoining is None or self.rejoining.done():
            self.rejoining = asyncio.create_task(self._rejoin())

    async def _rejoin(self) -> None:
        while True:
            await asyncio.sleep(RETRY_SECONDS)
            try:
                for group in self.joined:
                    await self.channel_layer.group_add(group, self.channel_name)
            except Exception as error:
                outage.failed("could not join the viewers again", error)
                continue
            outage.answered()
            return
