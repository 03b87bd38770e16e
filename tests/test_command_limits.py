"""Commands that store or send an event (feedback, steering notes, renames, answers) are
limited per user, in every interface together (issue 31: one user wrote 3,000 events in 9 s
through feedback, steer and rename). Sockets, their own rate and parallel requests are tested
against a real Daphne (tests/hardening/test_command_flood.py)."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from tests.api.conftest import bearer, make_token
from workflows import rates, services
from workflows.models import ChatMessage, WorkflowEvent

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def workflow_with_answer(owner):
    workflow = services.workflow_create(owner=owner)
    answer = services.message_create(
        workflow=workflow, role=ChatMessage.Role.ASSISTANT, content="42", round=1
    )
    return workflow, answer


def test_renames_count_with_the_rest_on_the_page_and_the_api(alice, alice_client, settings):
    """The page's rename and the API's count against the same minute: the page then shows
    the refusal by the title, the API answers 429 with Retry-After."""
    settings.POWERON_COMMANDS_PER_MINUTE = 3
    workflow = services.workflow_create(owner=alice)
    url = f"/workflows/{workflow.pk}/rename/"
    for number in range(3):
        alice_client.post(url, {"title": f"Title {number}"}, headers={"HX-Request": "true"})
    refused = alice_client.post(url, {"title": "One more"}, headers={"HX-Request": "true"})
    assert "Too many changes at once" in refused.content.decode()
    api = Client(headers=bearer(make_token(alice)))
    answer = api.patch(
        f"/api/v1/workflows/{workflow.pk}",
        {"title": "From a program"},
        content_type="application/json",
    )
    assert answer.status_code == 429 and int(answer["Retry-After"]) >= 1
    assert WorkflowEvent.objects.filter(type="title").count() == 3
    workflow.refresh_from_db()
    assert workflow.title == "Title 2"


def test_the_minute_passes(alice, settings, monkeypatch):
    """Marks older than a minute no longer count, and are dropped."""
    from datetime import timedelta

    from django.utils import timezone

    for _ in range(2):
        rates.take_command(alice.pk, 2)
    with pytest.raises(rates.Limited) as limited:
        rates.take_command(alice.pk, 2)
    assert 1 <= limited.value.retry_after <= 60
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr(timezone, "now", lambda: later)
    rates.take_command(alice.pk, 2)
    assert alice.rate_marks.filter(kind="command").count() == 1


async def test_a_steering_note_counts_too(alice, settings):
    """A note for a run counts against the minute like the rest (counted once it can be
    sent: a note to nothing running is refused for that, and not counted)."""
    from workflows.execution import launcher

    settings.POWERON_COMMANDS_PER_MINUTE = 1
    workflow, answer = await workflow_with_answer(alice)
    with pytest.raises(launcher.CommandRefused, match="Nothing is running"):
        await launcher.steer(workflow_id=workflow.pk, text="faster")
    await database_sync_to_async(rates.take_command)(alice.pk, 1)
    await workflow.__class__.objects.filter(pk=workflow.pk).aupdate(status="running")
    with pytest.raises(launcher.CommandLimited, match="Too many changes"):
        await launcher.steer(workflow_id=workflow.pk, text="faster")
    await asyncio.sleep(0)
