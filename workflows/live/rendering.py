"""Events as HTML: one exhaustive map from event type to its fragment template.

Each fragment is a set of HTMX out-of-band swaps; the first element carries the event's
seq so the page can skip anything it already has.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from .markdown import render_markdown

EventType = Literal[
    "round",
    "taskplan",
    "task",
    "plan",
    "act",
    "observe",
    "refine",
    "review",
    "thought",
    "delta",
    "message",
    "document",
    "usage",
    "status",
    "error",
    "ask",
    "approval",
    "notice",
]
EVENT_TYPES: tuple[str, ...] = get_args(EventType)


def template_for(event_type: str) -> str:
    """The fragment template of an event type (tests check that every type has its file)."""
    return f"workflows/events/{event_type}.html"


def render_event(event: dict[str, Any]) -> str:
    """The HTML fragment for one event in its public JSON shape."""
    event_type = event["type"]
    if event_type not in EVENT_TYPES:  # a type this build does not know: show it plainly
        event_type = "notice"
        event = {**event, "payload": {"level": "info", "text": f"{event['type']} event"}}
    payload = event.get("payload") or {}
    context = {
        "event": event,
        "p": payload,
        "r": event.get("round", 0),
        "t": event.get("task", 0),
        "a": event.get("action", 0),
        "workflow_id": event.get("workflow"),
        "code": str(payload.get("code") or "").replace("_", " "),
    }
    if event_type == "message" and payload.get("role") in ("assistant", "system"):
        context["html"] = mark_safe(render_markdown(payload.get("content", "")))  # noqa: S308
    return render_to_string(template_for(event_type), context)
