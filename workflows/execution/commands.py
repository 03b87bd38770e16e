"""What a client may ask over the socket, parsed into typed commands and carried out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from channels.db import database_sync_to_async
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from workflows import rates, services
from workflows.events import broadcast
from workflows.events.contract import Envelope
from workflows.execution import launcher
from workflows.execution.launcher import CommandRefused as CommandRefused  # re-exported
from workflows.models import ChatMessage

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def not_blank(text: str, why: str) -> str:
    """A text that says something (not only spaces and line breaks), else `why`."""
    if not text.strip():
        raise ValueError(why)
    return text


class Command(BaseModel):
    # HTMX's ws-send adds a HEADERS object to every message; it is not ours to validate.
    model_config = ConfigDict(extra="ignore")


class Send(Command):
    """Open a new round with a message and the documents uploaded for it."""

    action: Literal["send"]
    text: str = Field(min_length=1, max_length=20_000)
    documents: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(
        default_factory=list, max_length=100
    )
    """The uploads sent with it: as many as one upload takes (Django's 100 files)."""
    reruns: int | None = Field(default=None, ge=1)
    """Edit and resend: the earlier round this message runs again (with that round's uploads
    and only the history before it); that round stays as it was."""

    _said_something = field_validator("text")(
        lambda text: not_blank(text, "the message is empty; write what the agent should do")
    )


class Regenerate(Command):
    """Run a round's message again, as it was, for a new answer (a new round)."""

    action: Literal["regenerate"]
    round: int = Field(ge=1)


class Stop(Command):
    """Stop the running round: cancel the model call and the tool in flight, keep the rest."""

    action: Literal["stop"]


class Steer(Command):
    """A note that reaches the next action selection as a learning, without stopping."""

    action: Literal["steer"]
    text: str = Field(min_length=1, max_length=2_000)

    _said_something = field_validator("text")(
        lambda text: not_blank(
            text, "the note is empty; write what the agent should take into account"
        )
    )


class Extend(Command):
    """Answer the loop's question at max steps: continue for `steps` more (0 stops).

    The question's form sends `answer` too: its Stop here button sends "stop" beside whatever
    the steps box holds (even nothing), which then counts as 0."""

    action: Literal["extend"]
    steps: int = Field(ge=0, le=50)
    answer: Literal["continue", "stop"] = "continue"

    @model_validator(mode="before")
    @classmethod
    def _stop_here(cls, values: Any) -> Any:
        if isinstance(values, dict) and values.get("answer") == "stop":
            return {**values, "steps": 0}
        return values


class Approve(Command):
    """Approve or reject an action that waits for approval."""

    action: Literal["approve"]
    approved: bool = Field(strict=True)
    """true or false (a form's "1"/"0", "yes"/"no"…): anything else is refused, never read
    as a rejection."""


class Feedback(Command):
    """Thumbs up or down, with an optional comment, on an answer."""

    action: Literal["feedback"]
    message: int
    rating: int = Field(description="1 for thumbs up, -1 for thumbs down")
    comment: str = Field(default="", max_length=2_000)

    @field_validator("rating")
    @classmethod
    def _thumb(cls, rating: int) -> int:
        if rating not in (1, -1):
            raise ValueError("rating is 1 (thumbs up) or -1 (thumbs down)")
        return rating


class Resume(Command):
    """Replay every stored event after `after` (sent by a client that reconnects)."""

    action: Literal["resume"]
    after: int = Field(ge=0)


AnyCommand = Annotated[
    Send | Regenerate | Stop | Steer | Extend | Approve | Feedback | Resume,
    Field(discriminator="action"),
]
_adapter: TypeAdapter[AnyCommand] = TypeAdapter(AnyCommand)


def parse(content: Any) -> AnyCommand:
    """Validate a client message; raises ValidationError with what is wrong."""
    if isinstance(content, dict):
        content = coerce_form_values(content)
    return _adapter.validate_python(content)


def coerce_form_values(content: dict[str, Any]) -> dict[str, Any]:
    """HTML forms send strings and repeated fields; make them what the models expect."""
    values = dict(content)
    documents = values.get("documents")
    if isinstance(documents, str):
        values["documents"] = [documents] if documents else []
    if values.get("reruns") == "":
        values["reruns"] = None
    approved = values.get("approved")
    if isinstance(approved, str):  # the form's button values; anything else stays a string,
        known = {"1": True, "true": True, "yes": True, "on": True}  # which pydantic refuses
        known |= {"0": False, "false": False, "no": False, "off": False}
        values["approved"] = known.get(approved.strip().lower(), approved)
    elif type(approved) is int and approved in (0, 1):
        values["approved"] = bool(approved)
    return values


def describe(error: ValidationError) -> str:
    """One readable line per problem."""
    problems = [
        f"{'.'.join(str(p) for p in item['loc']) or 'message'}: "
        + item["msg"].removeprefix("Value error, ")
        for item in error.errors()
    ]
    return "Command not understood — " + "; ".join(problems)


STEER_SENT = "Steering note sent: the agent reads it before it chooses its next action."


async def execute(command: AnyCommand, *, user: User, workflow_id: int) -> str | None:
    """Carry out a command for the owner of the workflow; a confirmation to show, if any."""
    match command:
        case Send():
            await launcher.start_round(
                workflow_id=workflow_id,
                user=user,
                text=command.text,
                document_ids=command.documents,
                reruns=command.reruns,
            )
        case Regenerate():
            text = await round_text(workflow_id, command.round)
            await launcher.start_round(
                workflow_id=workflow_id, user=user, text=text, document_ids=[], reruns=command.round
            )
        case Stop():
            await launcher.request_stop(workflow_id=workflow_id)
        case Steer():
            await launcher.steer(workflow_id=workflow_id, text=command.text)
            return STEER_SENT
        case Extend():
            await launcher.answer(workflow_id=workflow_id, kind="extend", value=command.steps)
        case Approve():
            await launcher.answer(workflow_id=workflow_id, kind="approve", value=command.approved)
        case Feedback():
            await broadcast.broadcast(await record_feedback(workflow_id, command))
            return "Thanks — your feedback is saved."
        case Resume():  # handled by the consumer, which owns the replay position
            pass
    return None


@database_sync_to_async
def record_feedback(workflow_id: int, command: Feedback) -> Envelope:
    message = ChatMessage.objects.filter(
        pk=command.message, workflow_id=workflow_id, role=ChatMessage.Role.ASSISTANT
    ).first()
    if message is None:
        raise CommandRefused("Feedback goes on one of this workflow's answers.")
    try:
        return services.message_feedback(
            message=message, rating=command.rating, comment=command.comment
        )
    except rates.Limited as limited:
        raise launcher.CommandLimited(limited) from None


@database_sync_to_async
def round_text(workflow_id: int, round: int) -> str:
    """The text of the message that opened a round of the workflow."""
    message = ChatMessage.objects.filter(
        workflow_id=workflow_id, role=ChatMessage.Role.USER, round=round
    ).first()
    if message is None:
        raise CommandRefused(f"Round {round} is not a round of this workflow.")
    return message.content
