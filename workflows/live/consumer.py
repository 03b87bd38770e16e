"""The WebSocket consumer: thin. Authenticates, replays stored events, relays live ones,
and turns client commands into calls on the run."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from pydantic import ValidationError

from . import commands, live, selectors
from .models import ChatWorkflow
from .rendering import render_event

logger = logging.getLogger(__name__)

CLOSE_NOT_SIGNED_IN = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_REQUEST = 4400
REPLAY_BATCH = 500


@database_sync_to_async
def owned_workflow(user, workflow_id: int) -> ChatWorkflow | None:
    return ChatWorkflow.objects.filter(pk=workflow_id, owner=user).first()


@database_sync_to_async
def stored_events(workflow_id: int, after: int, upto: int | None) -> list[dict[str, Any]]:
    events = selectors.event_list_after(workflow_id=workflow_id, after_seq=after)
    if upto is not None:
        events = events.filter(seq__lte=upto)
    return [live.event_as_json(event) for event in events[:REPLAY_BATCH]]


class WorkflowConsumer(AsyncJsonWebsocketConsumer):
    """One browser tab or API client watching one workflow.

    Query parameters: `after` (the last seq the client has; default 0 replays everything)
    and `format` (`html`, the default, for HTMX fragments; `json` for API clients).
    """

    async def connect(self) -> None:
        """Called when a WebSocket connection is opened."""
        await self.accept()
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        self.workflow_id = int(self.scope["url_route"]["kwargs"]["workflow_id"])
        if await owned_workflow(user, self.workflow_id) is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.format = "json" if query.get("format") == ["json"] else "html"
        try:
            self.last_seq = max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        self.user = user
        # Subscribe before replaying: anything stored meanwhile arrives live and is
        # de-duplicated by seq, so there is neither a gap nor a duplicate.
        await self.channel_layer.group_add(live.viewers_group(self.workflow_id), self.channel_name)
        self.subscribed = True
        await self.replay(upto=None)

    async def disconnect(self, code: int) -> None:
        """Called when the socket closes; the run goes on without it."""
        if getattr(self, "subscribed", False):
            await self.channel_layer.group_discard(
                live.viewers_group(self.workflow_id), self.channel_name
            )

    async def replay(self, *, upto: int | None) -> None:
        """Send every stored event after last_seq (up to `upto`), in order."""
        while True:
            batch = await stored_events(self.workflow_id, self.last_seq, upto)
            for event in batch:
                await self.send_event(event)
            if len(batch) < REPLAY_BATCH:
                return

    async def workflow_event(self, message: dict[str, Any]) -> None:
        """A live event from the run, already stored (or an unstored token delta)."""
        event = message["event"]
        seq = event.get("seq")
        if seq is None:  # a live token delta: shown now, stored later in coalesced form
            await self.send_event(event)
            return
        if seq <= self.last_seq:
            return
        if seq > self.last_seq + 1:  # the layer dropped something: the database has it
            await self.replay(upto=seq - 1)
        await self.send_event(event)

    async def send_event(self, event: dict[str, Any]) -> None:
        if event.get("seq") is not None:
            self.last_seq = max(self.last_seq, event["seq"])
        if self.format == "json":
            await self.send_json(event)
        else:
            await self.send(text_data=render_event(event))

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """A command from the client: send, stop, steer, extend, approve, feedback, resume."""
        try:
            command = commands.parse(content)
        except ValidationError as error:
            await self.send_notice(commands.describe(error), level="error")
            return
        if isinstance(command, commands.Resume):
            self.last_seq = command.after
            await self.replay(upto=None)
            return
        try:
            confirmation = await commands.execute(
                command, user=self.user, workflow_id=self.workflow_id
            )
        except commands.CommandRefused as refusal:
            await self.send_notice(str(refusal), level="error")
            return
        if confirmation:
            await self.send_notice(confirmation, level="info")

    async def send_notice(self, text: str, *, level: str) -> None:
        """A message for this client only: not stored, not part of the workflow."""
        event = {
            "workflow": self.workflow_id,
            "seq": None,
            "type": "notice",
            "payload": {"level": level, "text": text},
        }
        await self.send_event(event)
