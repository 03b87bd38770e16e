"""Events as HTML: one exhaustive match from each event type to its fragment.

A fragment is a set of HTMX out-of-band swaps. Its first element is the event's metadata
(`#event-meta`, with data attributes: seq, type, key, role, final) so the page keeps its
replay position and streams deltas without reading anything out of the markup.
"""

from __future__ import annotations

from typing import Any, assert_never

from django.template.loader import get_template, render_to_string
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.safestring import mark_safe

from workflows.contract import (
    EVENT_TYPES,
    Envelope,
    FeedbackEvent,
    NoticeEvent,
    RunEvent,
    TitleEvent,
)
from workflows.engine.events import (
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
from workflows.markdown import render_markdown_for_page


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


def render_event(envelope: Envelope) -> str:
    """The HTML fragment of one event."""
    event = envelope.event
    extra: dict[str, Any] = {}
    match event:
        case MessageEvent():
            if event.role in ("assistant", "system"):
                extra["html"] = mark_safe(render_markdown_for_page(event.content))  # noqa: S308
        case StatusEvent():
            extra["code"] = event.code.replace("_", " ")
        case (
            RoundEvent()
            | TaskPlanEvent()
            | TaskEvent()
            | ActionPlanEvent()
            | PlanEvent()
            | ActEvent()
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
            | ApprovalEvent()
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
        **extra,
    }
    return render_to_string(template_for(event.type), context)
