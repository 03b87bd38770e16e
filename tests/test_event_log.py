"""The event log validates every event as stored before its transaction commits: a writer
whose event does not read back into the contract leaves nothing behind, neither the event
nor the change it came with."""

import pytest
from django.db import transaction
from pydantic import ValidationError

from workflows import services
from workflows.engine.records.events import UsageEvent
from workflows.events import log as event_log
from workflows.events.contract import RunEvent, TitleEvent
from workflows.models import ChatMessage, ChatWorkflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def unreadable(monkeypatch):
    """Every event stored from now on carries a field the contract does not declare (as a
    writer that built its payload by hand would)."""
    stored_as = event_log.payload_of
    monkeypatch.setattr(event_log, "payload_of", lambda event: {**stored_as(event), "x": 1})


def test_an_appended_event_comes_back_typed_with_its_seq(alice):
    """The log returns each event as its envelope, read back from the row it stored."""
    workflow = services.workflow_create(owner=alice)
    envelope = event_log.event_append(workflow_id=workflow.pk, event=TitleEvent(round=0, title="T"))
    assert envelope.seq == 1 and envelope.at is not None
    assert envelope.event == TitleEvent(round=0, title="T")


def test_a_usage_event_carries_the_workflows_tokens_after_it(alice):
    """A usage event adds its tokens to the workflow's and carries the total after it."""
    workflow = services.workflow_create(owner=alice)
    calls = [
        event_log.NewEvent(UsageEvent(round=1, kind="select", promptTokens=10, completionTokens=2)),
        event_log.NewEvent(UsageEvent(round=1, kind="refine", promptTokens=5, completionTokens=1)),
    ]
    stored = event_log.events_append(workflow_id=workflow.pk, events=calls)
    assert [envelope.event.workflowTokens for envelope in stored] == [12, 18]
    workflow.refresh_from_db()
    assert (workflow.prompt_tokens, workflow.completion_tokens) == (15, 3)


def test_an_invalid_event_is_refused_before_anything_is_committed(alice):
    """An event the contract refuses rolls back its seq and the workflow's totals."""
    workflow = services.workflow_create(owner=alice)
    bad = RunEvent.model_construct(round=1, task=0, action=0, type="run", status="maybe")
    with pytest.raises(ValidationError), transaction.atomic():  # the caller's transaction
        event_log.event_append(workflow_id=workflow.pk, event=bad)
    workflow.refresh_from_db()
    assert workflow.last_seq == 0 and not workflow.events.exists()


def test_a_rename_whose_event_does_not_fit_keeps_the_old_title(alice, unreadable):
    """workflow_rename: the new title is not committed without its valid event."""
    workflow = services.workflow_create(owner=alice, title="Old")
    with pytest.raises(ValidationError):
        services.workflow_rename(workflow=workflow, title="New")
    assert ChatWorkflow.objects.get(pk=workflow.pk).title == "Old"
    assert not workflow.events.exists()


def test_a_rating_whose_event_does_not_fit_is_not_kept(alice, unreadable):
    """message_feedback: the rating is not committed without its valid event."""
    workflow = services.workflow_create(owner=alice)
    message = services.message_create(workflow=workflow, role="assistant", content="A", round=1)
    with pytest.raises(ValidationError):
        services.message_feedback(message=message, rating=1, comment="good")
    assert ChatMessage.objects.get(pk=message.pk).feedback is None
    assert not workflow.events.exists()


def test_a_round_whose_message_event_does_not_fit_does_not_open(alice, unreadable):
    """round_open: neither the claimed round nor the user's message is committed without
    the message's valid event."""
    workflow = services.workflow_create(owner=alice)
    with pytest.raises(ValidationError):
        services.round_open(workflow_id=workflow.pk, owner=alice, text="Hi", document_ids=[])
    workflow.refresh_from_db()
    assert workflow.current_round == 0 and workflow.status == ChatWorkflow.Status.IDLE
    assert not workflow.messages.exists() and not workflow.events.exists()
