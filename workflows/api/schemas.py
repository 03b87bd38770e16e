"""What the API reads and answers, as pydantic models (the OpenAPI document is made from
them). Inputs that the page's socket also takes are its own command models
(`live.commands`), so a limit is written once; they only lose the socket's `action` field
and refuse unknown fields here."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from workflows.engine.records.state import Mode
from workflows.execution import commands

BIGINT = 2**63 - 1
"""The largest id a row can have."""
Id = Annotated[int, Field(ge=1, le=BIGINT)]

RunStatus = Literal[
    "idle", "queued", "running", "stopping", "waiting", "completed", "failed", "stopped"
]


NO_NUL = r"^[^\x00]*$"
VISIBLE = r"^[^\x00]*[^\s\x00-\x1f\x7f][^\x00]*$"
"""Text that says something: a character that is neither a space nor a control character,
and no NUL (the documents' patterns, checked as written)."""


def readable(text: str) -> str:
    """Text a database can store: no NUL character, no lone surrogate."""
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode text") from None
    return text


def visible(text: str) -> str:
    """Readable text with something to read (the page's rule, by the document's pattern)."""
    if not re.fullmatch(VISIBLE, readable(text)):
        raise ValueError("must hold a character that is neither a space nor a control one")
    return text


SAYS = {"pattern": VISIBLE}


class Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Inputs ---------------------------------------------------------------------------------


class WorkflowCreateIn(Input):
    """A new workflow: its mode and step limit (the title comes from the first message if
    none is given)."""

    title: str = Field(default="", max_length=200, json_schema_extra={"pattern": NO_NUL})
    mode: Mode = "react"
    maxSteps: int | None = Field(default=None, ge=1, le=50)
    """Steps per task before the run asks to go on; the site's default when left out."""

    _readable = field_validator("title")(readable)


class WorkflowRenameIn(Input):
    """A workflow's new title (spaces collapsed)."""

    title: str = Field(min_length=1, max_length=200, json_schema_extra={"pattern": VISIBLE})

    _visible = field_validator("title")(visible)


class SendIn(commands.Send):
    """A message that opens a new round, with the uploads sent with it (their ids, from the
    upload), and, with `reruns`, the earlier round it edits and runs again."""

    model_config = ConfigDict(extra="forbid")
    action: SkipJsonSchema[Literal["send"]] = Field(default="send", exclude=True)
    text: Annotated[str, commands.Send.model_fields["text"], Field(json_schema_extra=SAYS)]

    _visible = field_validator("text")(visible)


class EditIn(SendIn):
    """The edited text of an earlier round's message; the new round runs that round again
    with copies of its uploads, seeing only the rounds before it."""

    documents: SkipJsonSchema[list[int]] = Field(default_factory=list, max_length=0)
    reruns: SkipJsonSchema[None] = None


class SteerIn(commands.Steer):
    """A note for the run's next action selection (it does not stop the run)."""

    model_config = ConfigDict(extra="forbid")
    action: SkipJsonSchema[Literal["steer"]] = Field(default="steer", exclude=True)
    text: Annotated[str, commands.Steer.model_fields["text"], Field(json_schema_extra=SAYS)]

    _visible = field_validator("text")(visible)


class ExtendIn(commands.Extend):
    """The answer to the step-limit question: `steps` more (0, or `answer` "stop", stops the
    task with its work kept)."""

    model_config = ConfigDict(extra="forbid")
    action: SkipJsonSchema[Literal["extend"]] = Field(default="extend", exclude=True)


class ApproveIn(commands.Approve):
    """Approve (true) or reject (false) the action that waits for approval."""

    model_config = ConfigDict(extra="forbid")
    action: SkipJsonSchema[Literal["approve"]] = Field(default="approve", exclude=True)


# Outputs --------------------------------------------------------------------------------


class Tokens(BaseModel):
    prompt: int
    completion: int


class WorkflowOut(BaseModel):
    """A workflow and its run's state."""

    id: int
    title: str
    mode: Mode
    status: str
    """The stored status: idle, queued, running, stopping, stopped, completed or failed."""
    statusReason: str
    maxSteps: int
    currentRound: int
    lastSeq: int
    """The seq of its newest stored event."""
    tokens: Tokens
    created: datetime
    updated: datetime
    page: str
    """The workflow's page in the app (a path)."""


class WorkflowPage(BaseModel):
    """One page of the caller's workflows, newest activity first."""

    items: list[WorkflowOut]
    count: int
    """How many workflows match, over every page."""
    limit: int
    offset: int


class DocumentOut(BaseModel):
    """A document's metadata (its bytes are at `content`)."""

    id: int
    name: str
    mime: str
    size: int
    sha256: str
    label: str
    round: int
    source: Literal["uploaded", "produced", "fetched"]
    sourceUrl: str
    pending: bool
    """An upload not yet sent with a message (send its id with the next one)."""
    created: datetime
    content: str
    """Where to download it (a path of this API)."""


class DocumentList(BaseModel):
    documents: list[DocumentOut]


class MessageOut(BaseModel):
    """A message: the user's, an action's record, or the agent's answer."""

    id: int
    role: Literal["user", "assistant", "action", "system"]
    round: int
    task: int
    action: int
    method: str
    status: str
    content: str
    summary: str
    success: bool | None
    feedback: int | None
    reruns: int | None
    documents: list[int]
    created: datetime


class MessageList(BaseModel):
    messages: list[MessageOut]


class EventOut(BaseModel):
    """A stored event, as the live socket's `format=json` sends it; `payload` is the typed
    event of its `type` (see the README's event table)."""

    workflow: int
    seq: int
    type: str
    round: int
    task: int
    action: int
    payload: dict[str, Any] = Field(
        description="The event's own fields, by its `type`: see the JSON Schema of every "
        "event at /api/v1/events.schema.json.",
        json_schema_extra={
            "externalDocs": {
                "description": "Every event's payload, by type",
                "url": "/api/v1/events.schema.json",
            }
        },
    )
    at: str | None = Field(json_schema_extra={"format": "date-time"})
    """When it was stored (ISO 8601), exactly as the socket sends it."""


class EventPage(BaseModel):
    """Stored events after a seq, in order."""

    events: list[EventOut]
    lastSeq: int
    """The workflow's newest stored seq now."""
    next: int
    """The `after` for the next page: the last seq returned (or the `after` asked)."""
    more: bool
    """Whether events after `next` are stored already."""


class Question(BaseModel):
    """What the run waits for: `extend` (the step-limit question) or `approve` (an
    action's approval), with the event that asks it."""

    kind: Literal["extend", "approve"]
    event: EventOut


class RunOut(BaseModel):
    """The state of a workflow's run: queued (with how many runs wait ahead), running,
    waiting (with its question), stopping, or final (completed, failed, stopped); idle
    before its first message."""

    workflow: int
    status: RunStatus
    round: int
    reason: str
    ahead: int | None
    """Queued: how many queued runs wait ahead of this one."""
    question: Question | None
    lastSeq: int


class TokenOut(BaseModel):
    """The token a request came with (never its secret)."""

    name: str
    prefix: str
    scopes: list[str]
    expires: datetime | None
    created: datetime


class MeOut(BaseModel):
    """Who the caller is."""

    username: str
    token: TokenOut | None
    """None when the browser's session authenticated the request."""


class Problem(BaseModel):
    """RFC 9457 problem details."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str
    errors: list[dict[str, str]] | None = None
    """422: each field (`field`, dotted for nested ones) with what is wrong."""
    retryAfter: int | None = None
    """429: seconds to wait, as in Retry-After."""
