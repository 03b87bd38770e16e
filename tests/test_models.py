"""The data model and its constraints."""

import pytest
from django.db import IntegrityError, transaction

from workflows import services
from workflows.events import log as event_log
from workflows.events.contract import TitleEvent
from workflows.models import ChatWorkflow, Connection, WorkflowEvent

pytestmark = pytest.mark.django_db


def test_event_append_gives_increasing_seq_per_workflow(alice):
    """Each workflow numbers its own events 1, 2, 3… independently of others."""
    first = services.workflow_create(owner=alice)
    second = services.workflow_create(owner=alice)
    title = TitleEvent(round=0, title="t")
    seqs = [event_log.event_append(workflow_id=first.pk, event=title).seq for _ in "abc"]
    other = event_log.event_append(workflow_id=second.pk, event=title).seq
    assert seqs == [1, 2, 3]
    assert other == 1
    first.refresh_from_db()
    assert first.last_seq == 3


def test_seq_is_unique_per_workflow(alice):
    """The database refuses a second event with the same seq in one workflow."""
    workflow = services.workflow_create(owner=alice)
    WorkflowEvent.objects.create(workflow=workflow, seq=1, type="status")
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkflowEvent.objects.create(workflow=workflow, seq=1, type="status")


def test_seq_must_be_positive(alice):
    """seq 0 is reserved for "nothing seen yet" in replay requests."""
    workflow = services.workflow_create(owner=alice)
    with pytest.raises(IntegrityError), transaction.atomic():
        WorkflowEvent.objects.create(workflow=workflow, seq=0, type="status")


def test_workflow_defaults(alice, settings):
    """New workflows are idle React workflows with the configured step limit."""
    settings.POWERON_MAX_STEPS = 7
    workflow = services.workflow_create(owner=alice)
    assert workflow.status == ChatWorkflow.Status.IDLE
    assert workflow.mode == ChatWorkflow.Mode.REACT
    assert workflow.max_steps == 7
    assert workflow.total_tokens == 0


def test_connection_label_unique_per_owner(alice, bob):
    """Two users may both have a "search" connection; one user may not have two."""
    services.connection_create(owner=alice, label="search", kind="tavily", secret="a")
    services.connection_create(owner=bob, label="search", kind="tavily", secret="b")
    with pytest.raises(IntegrityError), transaction.atomic():
        Connection.objects.create(owner=alice, label="search", kind="tavily", secret="c")


def test_connection_never_shows_its_secret(alice):
    """str() and repr() of a connection leave the secret out (logs, admin, templates)."""
    connection = services.connection_create(
        owner=alice, label="search", kind="tavily", secret="tvly-SECRET"
    )
    assert "tvly-SECRET" not in str(connection)
    assert "tvly-SECRET" not in repr(connection)


def test_document_create_stores_file_with_hash(alice, media_root):
    """A stored document has its size, sha256, guessed mime type and a file under MEDIA_ROOT."""
    workflow = services.workflow_create(owner=alice)
    document = services.document_create(
        workflow=workflow, name="../../etc/passwd.txt", data=b"hello", label="round1_upload"
    )
    assert document.size == 5
    assert document.sha256 == "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert document.mime_type == "text/plain"
    path = document.file.path
    assert path.startswith(str(media_root))
    assert ".." not in document.file.name
    with document.file.open("rb") as handle:
        assert handle.read() == b"hello"


def test_migrations_are_up_to_date():
    """makemigrations --check finds nothing to write."""
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_a_new_round_brings_the_workflow_to_the_top(alice):
    """The sidebar lists the workflow with the latest round first."""
    from workflows.selectors import workflow_list

    older = services.workflow_create(owner=alice, title="older")
    newer = services.workflow_create(owner=alice, title="newer")
    assert list(workflow_list(user=alice)) == [newer, older]
    services.round_open(workflow_id=older.pk, owner=alice, text="again", document_ids=[])
    assert list(workflow_list(user=alice)) == [older, newer]
