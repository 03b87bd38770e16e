"""The streaming contract, whole: every event a viewer can receive, typed, in one envelope.

The engine's events (`engine.events`) and the host's own (a run's status, notices for one
socket) form one discriminated union. Every event is validated where it is built and again
where it is read back, so an undeclared field or an unknown type fails loudly. The JSON a
client receives and the HTML fragment the page receives are two renderings of one Envelope.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from workflows.engine.records.events import ENGINE_EVENTS, BaseEvent, EngineEvent

ROUTING_FIELDS = frozenset({"type", "round", "task", "action"})
"""Envelope fields; everything else of an event is its payload."""

FinalStatus = Literal["completed", "failed", "stopped"]
"""How a run ended."""

FINAL_STATUSES: tuple[FinalStatus, ...] = get_args(FinalStatus)


class RunEvent(BaseEvent):
    """The run's status as the host sees it. A final one (completed, failed, stopped) is the
    last event of every run, however it ended. Before that: queued (waiting for a worker,
    also when handed back), running (a worker took it, or it resumed after an interruption),
    stopping (while a stop takes effect)."""

    type: Literal["run"] = "run"
    status: Literal["queued", "running", "stopping", "completed", "failed", "stopped"]
    reason: str = ""

    @property
    def final(self) -> bool:
        """Whether the run has ended."""
        return self.status in FINAL_STATUSES


class NoticeEvent(BaseEvent):
    """A message for one socket only (a refused command, a confirmation): never stored."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "error"]
    text: str
    more: int | None = None
    """A replay's page ended at this seq and more events are stored after it: the client
    asks for the next page with `{"action": "resume", "after": more}`."""


class FeedbackEvent(BaseEvent):
    """The user rated an answer; the latest rating of a message is the one that counts, and
    a reloaded page shows it again."""

    type: Literal["feedback"] = "feedback"
    messageId: int
    rating: Literal[1, -1]
    comment: str = ""


class TitleEvent(BaseEvent):
    """The user renamed the workflow: every open page, and every later replay, ends with the
    title chosen last (a user message's `title` only names a workflow that had none)."""

    type: Literal["title"] = "title"
    title: str


HostEvent: TypeAlias = RunEvent | NoticeEvent | FeedbackEvent | TitleEvent
"""The events the host adds to the engine's."""

HOST_EVENTS: tuple[type[BaseEvent], ...] = get_args(HostEvent)

AnyEvent: TypeAlias = EngineEvent | HostEvent
"""Every event of the contract: a union the type checker sees member by member, so a `match`
over it is checked for exhaustiveness."""

TypedEvent = Annotated[AnyEvent, Field(discriminator="type")]
"""The union as pydantic validates it: by `type` (an unknown type or field fails)."""

any_event: TypeAdapter[AnyEvent] = TypeAdapter(TypedEvent)
"""Validates an event of any type."""


EVENT_TYPES: tuple[str, ...] = tuple(
    model.model_fields["type"].default for model in (*ENGINE_EVENTS, *HOST_EVENTS)
)


class Envelope(BaseModel):
    """One event as stored and sent: its workflow, its seq and time, and the typed event."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow: int
    seq: int | None
    """Per-workflow and increasing; None for what is never stored (live deltas, notices)."""
    at: datetime | None = None
    event: TypedEvent

    @property
    def type(self) -> str:
        """The event's type."""
        return str(self.event.type)

    @property
    def final(self) -> bool:
        """Whether this is a run's final status."""
        return isinstance(self.event, RunEvent) and self.event.final

    def as_json(self, *, operator: bool = False) -> dict[str, Any]:
        """The public JSON shape: `{workflow, seq, type, round, task, action, payload, at}`,
        without the operator's detail an error may carry (staff read it in admin; `operator`
        keeps it, for the operator's own command line)."""
        event = self.event
        payload = payload_of(event)
        if not operator:
            payload.pop(OPERATOR_ONLY, None)
        return {
            "workflow": self.workflow,
            "seq": self.seq,
            "type": event.type,
            "round": event.round,
            "task": event.task,
            "action": event.action,
            "payload": payload,
            "at": self.at.isoformat() if self.at else None,
        }

    @classmethod
    def from_row(cls, row: Any) -> Envelope:
        """A stored event (a WorkflowEvent row), validated back into its typed envelope."""
        event = event_from(row.type, row.payload, round=row.round, task=row.task, action=row.action)
        return cls(workflow=row.workflow_id, seq=row.seq, at=row.created, event=event)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Envelope:
        """Validate the public JSON shape back into a typed envelope."""
        event = event_from(
            data["type"],
            data.get("payload") or {},
            round=data.get("round", 0),
            task=data.get("task", 0),
            action=data.get("action", 0),
        )
        return cls(workflow=data["workflow"], seq=data.get("seq"), at=data.get("at"), event=event)


OPERATOR_ONLY = "detail"
"""The payload key an error's operator detail is stored under: never in the public JSON."""


def payload_of(event: BaseEvent) -> dict[str, Any]:
    """An event's own fields as JSON (what is stored as the payload)."""
    return event.model_dump(mode="json", exclude=set(ROUTING_FIELDS))


def event_from(
    type: str, payload: dict[str, Any], *, round: int, task: int, action: int
) -> AnyEvent:
    """The typed event from its stored parts; raises ValidationError on anything undeclared."""
    return any_event.validate_python(
        {**payload, "type": type, "round": round, "task": task, "action": action}
    )


def engine_event(event: AnyEvent) -> EngineEvent | None:
    """The event when it is one the engine emits; None for the host's own."""
    match event:
        case RunEvent() | NoticeEvent() | FeedbackEvent() | TitleEvent():
            return None
        case _:
            return event
