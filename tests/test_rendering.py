"""Every event type has its fragment, and model text reaches the page sanitised."""

import typing
from pathlib import Path

from django.conf import settings

from workflows.engine.events import Event
from workflows.rendering import EVENT_TYPES, render_event, template_for


def engine_event_types() -> set[str]:
    union = typing.get_args(Event)[0]
    return {
        typing.get_args(model.model_fields["type"].annotation)[0]
        for model in typing.get_args(union)
    }


def test_every_engine_event_type_has_a_template():
    """The map covers every event the engine can emit (and the host's own notices)."""
    assert engine_event_types() <= set(EVENT_TYPES)
    for event_type in EVENT_TYPES:
        assert (Path(settings.BASE_DIR) / "templates" / template_for(event_type)).is_file()


def event(type_, payload, **position):
    return {
        "workflow": 1,
        "seq": 7,
        "type": type_,
        "payload": payload,
        "round": 1,
        "task": position.get("task", 0),
        "action": position.get("action", 0),
    }


def test_answer_markdown_is_sanitised():
    """A script tag or an event handler in the model's answer never reaches the page."""
    html = render_event(
        event(
            "message",
            {
                "key": "round1_answer",
                "role": "assistant",
                "messageId": 3,
                "content": "**Done** <script>alert(1)</script> <img src=x onerror=alert(2)> "
                "[x](javascript:alert(3))",
            },
        )
    )
    assert "<strong>Done</strong>" in html
    assert "<script" not in html
    assert "<img" not in html
    assert 'href="javascript' not in html


def test_web_text_in_observations_is_escaped():
    """Snippets and notes from the web are text, never markup."""
    html = render_event(
        event(
            "observe",
            {
                "observation": {
                    "success": True,
                    "resultLabel": "round1_task1_action1_results",
                    "documentsCount": 1,
                    "previews": [
                        {
                            "name": "<b>x</b>",
                            "mime": "text/html",
                            "snippet": "<script>bad()</script>",
                        }
                    ],
                    "notes": ["<img src=x onerror=alert(1)>"],
                }
            },
            task=1,
            action=1,
        )
    )
    assert "<script>bad()" not in html
    assert "&lt;script&gt;" in html
    assert "<img" not in html


def test_fragments_carry_their_seq():
    """Each stored event's fragment names its seq for the page's de-duplication."""
    html = render_event(event("status", {"code": "criteria_met", "reason": "Done."}))
    assert 'data-seq="7"' in html
    assert "criteria met" in html


def test_unknown_event_type_renders_as_a_notice():
    """An event type this build does not know is shown plainly rather than crashing."""
    html = render_event(event("future_type", {}))
    assert "future_type event" in html
