"""Events as HTML: one exhaustive match from each event type to its fragment.

A fragment is a set of HTMX out-of-band swaps. Its first element is the event's metadata
(`#event-meta`, with data attributes: seq, type, key, role, final) so the page keeps its
replay position and streams deltas without reading anything out of the markup.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, assert_never

from django.template.loader import get_template, render_to_string
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.safestring import mark_safe

from workflows.engine.records.events import (
    ActEvent,
    ActionPlanEvent,
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    DocumentEvent,
    ErrorEvent,
    MessageEvent,
    ObserveEvent,
    PlanEvent,
    RefineEvent,
    ReviewEvent,
    RoundEvent,
    StatusEvent,
    StepEvent,
    TaskEvent,
    TaskPlanEvent,
    ThoughtEvent,
    UsageEvent,
)
from workflows.events.contract import (
    EVENT_TYPES,
    Envelope,
    FeedbackEvent,
    NoticeEvent,
    RunEvent,
    TitleEvent,
)
from workflows.markdown import render_markdown_for_page


class Shown(NamedTuple):
    """A document an action uses, as a person reads it: its name, and where it came from."""

    name: str
    url: str | None = None


def shown_parameters(parameters: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each parameter with its values written out whole (a list's items one by one, a URL in
    full), as the user approves them."""
    shown = []
    for name, value in parameters.items():
        values = value if isinstance(value, list) else [value]
        shown.append((name, [as_text(item) for item in values if item is not None]))
    return shown


def as_text(value: Any) -> str:
    """A parameter value as text: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def referenced(reference: str) -> Shown:
    """A document reference by what a person knows it by: a docItem by its document's name,
    a docList by its label."""
    kind, _, rest = reference.partition(":")
    if kind == "docItem" and ":" in rest:
        return Shown(rest.partition(":")[2])
    if kind == "docList":
        return Shown(f"the documents labelled {rest}")
    return Shown(reference)


def for_staff(envelope: Envelope) -> bool:
    """Whether staff see more of this event than everyone else: an error with the
    operator's detail."""
    return isinstance(envelope.event, ErrorEvent) and bool(envelope.event.detail)


def template_for(event_type: str) -> str:
    """The fragment template of an event type."""
    return f"workflows/events/{event_type}.html"


def preload() -> None:
    """Compile every event's template, with the tag libraries it loads, and load the URL
    patterns and number formats they use: at start-up, not while the first round renders."""
    for event_type in EVENT_TYPES:
        get_template(template_for(event_type))
    reverse("workflows:document", args=[1, 1])
    number_format(1.5)


def render_event(envelope: Envelope, *, staff: bool = False) -> str:
    """The HTML fragment of one event (`staff`: for a staff viewer, with the operator's
    detail an error may carry)."""
    event = envelope.event
    extra: dict[str, Any] = {}
    match event:
        case MessageEvent():
            if event.role in ("assistant", "system"):
                extra["html"] = mark_safe(render_markdown_for_page(event.content))  # noqa: S308
        case StatusEvent():
            extra["code"] = event.code.replace("_", " ")
        case ActEvent():
            extra["params"] = shown_parameters(event.parameters)
            extra["documents"] = [referenced(ref) for ref in event.documents]
            extra["connection"] = event.connection
        case ApprovalEvent():
            extra["params"] = shown_parameters(event.parameters)
            extra["documents"] = [Shown(d.name, d.sourceUrl) for d in event.documents]
            extra["connection"] = event.connection
        case (
            RoundEvent()
            | TaskPlanEvent()
            | TaskEvent()
            | ActionPlanEvent()
            | PlanEvent()
            | ObserveEvent()
            | RefineEvent()
            | ReviewEvent()
            | StepEvent()
            | ThoughtEvent()
            | DeltaEvent()
            | DocumentEvent()
            | UsageEvent()
            | ErrorEvent()
            | AskEvent()
            | RunEvent()
            | NoticeEvent()
            | FeedbackEvent()
            | TitleEvent()
        ):
            pass
        case _:
            assert_never(event)
    context = {
        "e": event,
        "seq": envelope.seq,
        "at": envelope.at,
        "final": envelope.final,
        "workflow_id": envelope.workflow,
        "r": event.round,
        "t": event.task,
        "a": event.action,
        "staff": staff,
        **extra,
    }
    return render_to_string(template_for(event.type), context)
