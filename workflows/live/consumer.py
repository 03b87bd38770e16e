"""The WebSocket consumer: thin. Authenticates, replays stored events, relays live ones,
and turns client commands into calls on the run.

The channel layer may drop a message (a full queue, a Redis blip). The database is the
record: the order of what one socket receives is kept by a `follow.Follower` (every reader
of a workflow's events keeps it the same way): a gap in the seqs is filled from the database
at once, and while a run may be going the socket also asks the database whenever it heard
nothing for a while, so every viewer reaches the final status even when the layer lost it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from django.conf import settings
from pydantic import ValidationError

from workflows.events import broadcast, frames
from workflows.events.contract import Envelope, NoticeEvent
from workflows.execution import commands
from workflows.models import ChatWorkflow

from .follow import Follower, Frame, stored_last_seq
from .layer import SteadyLayerConsumer

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

CLOSE_NOT_SIGNED_IN = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_REQUEST = 4400
CLOSE_FELL_BEHIND = 4013
"""Try again later (1013's meaning, in the range for applications: the WebSocket library
refuses to send 1013 itself): the page reconnects on its own and replays from where it was."""
FELL_BEHIND_EVENTS = 500
"""A viewer this many events behind the live stream is closed rather than fed inline."""
CONTINUE_MOST_BYTES = 200
"""A frame asking for the next page of a replay is this short: it is read even past the
socket's rate (a page at a time is the pace the client reads at)."""

RESUME_INTERVAL_SECONDS = 1.0
SOCKET_COMMAND_BURST = 10
"""Commands one socket may send at once; then SOCKET_COMMANDS_PER_SECOND (a frame that is
not a command counts too: each is answered)."""
SOCKET_COMMANDS_PER_SECOND = 2.0
TOO_MANY_COMMANDS = (
    f"Too many commands on this connection: at most {SOCKET_COMMAND_BURST} at once, then "
    f"{SOCKET_COMMANDS_PER_SECOND:g} a second. What came past that was not carried out."
)


class Bucket:
    """A token bucket: `burst` at once, refilled at `rate` a second."""

    def __init__(self, burst: int, rate: float) -> None:
        self.burst = burst
        self.rate = rate
        self.tokens = float(burst)
        self.at = time.monotonic()
        self.said = False
        """Whether the client was told it is over, since it last was not."""

    def take(self) -> bool:
        """Whether one more may go now (and count it)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        self.said = False
        return True


RESUMING_TOO_OFTEN = "Resume at most once a second; the events after it are on their way."
MORE_STORED = (
    'More events are stored after seq {seq}: send {{"action": "resume", "after": {seq}}} '
    "for the next page."
)
NOT_JSON = 'Command not understood — send a JSON text frame such as {"action": "stop"}.'
NOT_AN_OBJECT = 'Command not understood — a command is a JSON object with an "action".'


@database_sync_to_async
def owned_workflow(user: User, workflow_id: int) -> ChatWorkflow | None:
    return ChatWorkflow.objects.filter(pk=workflow_id, owner=user).first()


@database_sync_to_async
def owned(user_id: int, workflow_id: int) -> bool:
    """Whether the workflow (still) is the user's."""
    return ChatWorkflow.objects.filter(pk=workflow_id, owner_id=user_id).exists()


def signed_in(session_key: str, user_id: int) -> bool:
    """Whether the session the socket was opened under is still this user's: not signed out,
    not expired, its password unchanged since, the account active."""
    from importlib import import_module

    from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.utils.crypto import constant_time_compare

    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        return False
    if not session_key:
        return True
    # load() reads only an unexpired session; {} when it is gone or expired.
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()
    if session.get(SESSION_KEY) != str(user.pk):
        return False
    stored = session.get(HASH_SESSION_KEY) or ""
    hashes = [user.get_session_auth_hash(), *user.get_session_auth_fallback_hash()]
    return any(constant_time_compare(stored, each) for each in hashes)


@database_sync_to_async
def lost_access(session_key: str, user_id: int, workflow_id: int) -> int | None:
    """The close code of a socket that may no longer act or watch: its session ended
    (`signed_in`), or the workflow is no longer its user's (deleted, or given to another
    user in admin); None while it may."""
    if not signed_in(session_key, user_id):
        return CLOSE_NOT_SIGNED_IN
    if not ChatWorkflow.objects.filter(pk=workflow_id, owner_id=user_id).exists():
        return CLOSE_NOT_FOUND
    return None


class WorkflowConsumer(SteadyLayerConsumer):
    """One browser tab or API client watching one workflow.

    Query parameters: `after` (the last seq the client has; default 0 replays everything)
    and `format` (`html`, the default, for HTMX fragments; `json` for API clients).
    """

    async def connect(self) -> None:
        """Called when a WebSocket connection is opened."""
        await self.accept()
        scoped = self.scope.get("user")
        if scoped is None or not scoped.is_authenticated:
            await self.close(code=CLOSE_NOT_SIGNED_IN)
            return
        # AuthMiddleware's lazy proxy of the signed-in User, which it behaves as throughout.
        user = cast("User", scoped)
        self.workflow_id = int(self.scope["url_route"]["kwargs"]["workflow_id"])
        workflow = await owned_workflow(user, self.workflow_id)
        if workflow is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.format = "json" if query.get("format") == ["json"] else "html"
        try:
            after = max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        self.resumed = 0.0
        self.checked = time.monotonic()
        """When the workflow was last found to be the viewer's."""
        self.disowned = False
        self.frames_allowed = Bucket(SOCKET_COMMAND_BURST, SOCKET_COMMANDS_PER_SECOND)
        self.user = user
        self.session_key = getattr(self.scope.get("session"), "session_key", None) or ""
        if self.session_key:  # signing out closes this socket (see `session_ended`)
            await self.join(broadcast.session_group(self.session_key))
        # Past the end counts as the end: a seq the workflow has not reached yet would make
        # every later event look old (the socket went silent).
        page = int(settings.POWERON_REPLAY_PAGE)
        self.follower = Follower(
            self.workflow_id,
            min(after, workflow.last_seq),
            self.send_frame,
            behind_most=FELL_BEHIND_EVENTS,
            page=page or None,
            more=self.say_more,
        )
        self.commands: asyncio.Queue[commands.AnyCommand | None] = asyncio.Queue()
        self.executor = asyncio.create_task(self.execute_commands())
        # Subscribe before replaying: anything stored meanwhile arrives live and is
        # de-duplicated by seq, so there is neither a gap nor a duplicate.
        await self.join(broadcast.viewers_group(self.workflow_id))
        async with self.follower.ordered:
            await self.follower.next_page()
        self.watcher = asyncio.create_task(self.follower.catch_up())

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Hand a message to its handler at once. Channels would first close stale database
        connections on Django's one thread for sync code, where every live event of every
        viewer of the process queued behind the process's database writes (fifty rounds
        starting at once held each event about a second). The consumer reads the database only
        through database_sync_to_async, which cleans up connections itself."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def disconnect(self, code: int) -> None:
        """Called when the socket closes; the run goes on without it (and a command already
        sent is still carried out)."""
        if hasattr(self, "watcher"):
            self.watcher.cancel()
        if hasattr(self, "commands"):
            self.commands.put_nowait(None)  # the executor ends after what was sent before
        await self.leave_all()

    async def session_ended(self, message: dict[str, Any]) -> None:
        """The session this socket was opened under signed out."""
        await self.close(code=CLOSE_NOT_SIGNED_IN)

    async def workflow_gone(self, message: dict[str, Any]) -> None:
        """The workflow was deleted (in another tab): this socket ends."""
        await self.close(code=CLOSE_NOT_FOUND)

    async def workflow_owner(self, message: dict[str, Any]) -> None:
        """The workflow was given to another user (in admin): its former owner's sockets end
        as for a workflow that is not theirs."""
        if message.get("owner") != self.user.pk:
            await self.close(code=CLOSE_NOT_FOUND)

    async def workflow_event(self, message: dict[str, Any]) -> None:
        """A live event from the run, already stored (or an unstored frame of an answer),
        rendered once by the process that stored it: sent as it is."""
        await self.workflow_events(message)

    async def workflow_events(self, message: dict[str, Any]) -> None:
        """Live events of the run sent together (or one), in order; a viewer too far behind
        is closed to reconnect and replay rather than fed inline."""
        if not await self.follower.take(message):
            await self.close(code=CLOSE_FELL_BEHIND)

    async def send_frame(self, frame: Frame) -> None:
        """Send one event in the format this viewer asked for, shortened when it would not
        fit one WebSocket message (`frames`). Whether the workflow is still the viewer's is
        asked again every POWERON_CATCH_UP_SECONDS of delivery (a reassignment also closes
        the socket at once, `workflow_owner`; this holds when the layer lost that)."""
        if self.disowned:
            return
        now = time.monotonic()
        if now - self.checked > float(settings.POWERON_CATCH_UP_SECONDS):
            self.checked = now
            if not await owned(self.user.pk, self.workflow_id):
                self.disowned = True
                await self.close(code=CLOSE_NOT_FOUND)
                return
        staff = bool(getattr(self.user, "is_staff", False))
        text = frame.json if self.format == "json" else frame.html_for(staff=staff)
        if not frames.fits(text):
            fit = frames.fitted_json if self.format == "json" else frames.fitted_html
            text = fit(frame.envelope)
        await self.send(text_data=text)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """A frame from the client: a command as a JSON object. Anything else is answered
        with a notice, and the socket stays open. Past the socket's own rate (`Bucket`),
        frames are dropped with one notice."""
        if not self.frames_allowed.take() and not self.continues(text_data):
            if not self.frames_allowed.said:
                self.frames_allowed.said = True
                await self.send_notice(TOO_MANY_COMMANDS, level="error")
            return
        if text_data is None:
            await self.send_notice(NOT_JSON, level="error")
            return
        try:
            content = await self.decode_json(text_data)
        except (ValueError, RecursionError):  # not JSON, not UTF-8 text, or nested too deep
            await self.send_notice(NOT_JSON, level="error")
            return
        if not isinstance(content, dict):
            await self.send_notice(NOT_AN_OBJECT, level="error")
            return
        await self.receive_json(content, **kwargs)

    def continues(self, text: str | None) -> bool:
        """Whether a frame asks for the next page of this socket's replay (the page it was
        sent ended at `after`)."""
        if not self.follower.paging or text is None or len(text) > CONTINUE_MOST_BYTES:
            return False
        try:
            command = commands.parse(json.loads(text))
        except (ValueError, ValidationError):
            return False
        return isinstance(command, commands.Resume) and command.after == self.follower.last_seq

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """A command from the client: send, stop, steer, extend, approve, feedback, resume."""
        try:
            command = commands.parse(content)
        except ValidationError as error:
            await self.send_notice(commands.describe(error), level="error")
            return
        except RecursionError:
            await self.send_notice(NOT_AN_OBJECT, level="error")
            return
        if isinstance(command, commands.Resume):
            await self.resume(command.after)
            return
        self.commands.put_nowait(command)

    async def resume(self, after: int) -> None:
        """Replay what came after `after`. The next page of a paged replay (`after` where
        the last page ended) comes at once; any other resume at most once a second, as a
        page (without pages, a client more than a fell-behind's worth behind is closed to
        reconnect with `after`): each resume re-sends events, so a client resuming in a
        loop without reading would fill the server's memory."""
        if self.follower.paging and after == self.follower.last_seq:
            async with self.follower.ordered:
                await self.follower.next_page()
            return
        now = time.monotonic()
        if now - self.resumed < RESUME_INTERVAL_SECONDS:
            await self.send_notice(RESUMING_TOO_OFTEN, level="error")
            return
        self.resumed = now
        stored = await stored_last_seq(self.workflow_id) or 0
        if self.follower.page is None and stored - after > FELL_BEHIND_EVENTS:
            await self.close(code=CLOSE_FELL_BEHIND)
            return
        async with self.follower.ordered:
            self.follower.last_seq = min(after, stored)
            await self.follower.next_page()

    async def execute_commands(self) -> None:
        """Carry out the client's commands one after another, in the order sent, beside the
        delivery of events: a send that waits for the database does not hold up the events
        this socket is owed."""
        while True:
            command = await self.commands.get()
            if command is None:
                return
            code = await lost_access(self.session_key, self.user.pk, self.workflow_id)
            if code is not None:  # a command acts for nobody now, or for another's workflow
                await self.close(code=code)
                return
            try:
                confirmation = await commands.execute(
                    command, user=self.user, workflow_id=self.workflow_id
                )
            except commands.CommandRefused as refusal:
                await self.send_notice(str(refusal), level="error")
                continue
            except Exception:
                logger.exception("command %s failed", type(command).__name__)
                await self.send_notice("That did not work; please try again.", level="error")
                continue
            if confirmation:
                await self.send_notice(confirmation, level="info")

    async def say_more(self, seq: int) -> None:
        """Tell the client a page of its replay ended at `seq` and more is stored (held:
        `ordered`)."""
        notice = NoticeEvent(round=0, level="info", text=MORE_STORED.format(seq=seq), more=seq)
        await self.follower.deliver(
            Frame.stored(Envelope(workflow=self.workflow_id, seq=None, event=notice))
        )

    async def send_notice(self, text: str, *, level: Literal["info", "error"]) -> None:
        """A message for this client only: not stored, not part of the workflow."""
        notice = NoticeEvent(round=0, level=level, text=text)
        envelope = Envelope(workflow=self.workflow_id, seq=None, event=notice)
        async with self.follower.ordered:
            await self.follower.deliver(Frame.stored(envelope))
