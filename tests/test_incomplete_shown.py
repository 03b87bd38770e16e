"""A task cut short with work left reads as such wherever it is shown: its badge and check on
the page, and the round's reason in the Markdown export."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest
from django.conf import settings
from django.urls import reverse

from tests.support.page import Element, parse
from workflows import services
from workflows.engine.records.events import ReviewEvent, RoundEvent, TaskEvent
from workflows.engine.records.parts import TaskStatus
from workflows.events.contract import Envelope
from workflows.events.rendering import render_event
from workflows.execution import recording

UNFINISHED = (
    "The maximum of 1 step was reached. Its last refinement said more was needed: “continue”"
)


def rendered(event) -> str:
    return render_event(Envelope(workflow=1, seq=7, event=event))


def elements(html: str, classes: set[str]) -> list[Element]:
    """The fragment's elements that have all of `classes`."""
    return [e for top in parse(html) for e in top.walk() if classes <= e.classes()]


def test_an_incomplete_task_and_its_review_say_so_on_the_page() -> None:
    """The task's badge and its check in the round's list, and the review's badge, read
    "incomplete" with that class, and the check gives the reason."""
    task = TaskEvent(round=1, task=1, status="incomplete", objective="Report", reason=UNFINISHED)
    (badge,) = elements(rendered(task), {"badge", "badge-incomplete"})
    assert badge.text == "incomplete"
    (check,) = elements(rendered(task), {"check", "incomplete"})
    assert UNFINISHED in check.text
    review = rendered(ReviewEvent(round=1, task=1, status="incomplete", reason=UNFINISHED))
    (badge,) = elements(review, {"badge", "badge-incomplete"})
    assert badge.text == "incomplete"


def test_every_task_status_has_a_colour_of_its_own() -> None:
    """Each status a task can end in has a badge colour and a mark in the round's list (an
    unstyled badge reads like pending)."""
    css = (Path(settings.BASE_DIR) / "static" / "css" / "app.css").read_text()
    for status in set(get_args(TaskStatus)) - {"pending", "running"}:
        assert re.search(rf"\.badge-{status}\b[^{{]*\{{[^}}]*background", css), status
        assert re.search(rf"\.check\.{status}::before", css), status


@pytest.mark.django_db
def test_the_markdown_export_says_why_a_round_ended(alice, alice_client) -> None:
    """The round's heading says it failed, and the line under it what was not finished."""
    workflow = services.workflow_create(owner=alice, title="Canary")
    services.message_create(workflow=workflow, role="user", content="Write it", round=1)
    reason = f"The task was not finished: Task 1: {UNFINISHED}"
    recording.record(workflow.pk, RoundEvent(round=1, status="failed", reason=reason))
    response = alice_client.get(reverse("workflows:export", args=[workflow.pk, "md"]))
    text = response.content.decode()
    assert "## Round 1 — failed\n" in text
    assert f"\n> {reason}\n" in text
