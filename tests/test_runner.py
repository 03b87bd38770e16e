"""The runner: a whole round stored event by event, then settled in a final status."""

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive_until
from workflows import services
from workflows.execution import launcher
from workflows.models import ChatDocument, ChatMessage, ChatWorkflow

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

NOTES = b"""# Quarterly notes

Revenue grew 12 percent in the third quarter. Costs fell by 3 percent.
The team shipped the new search feature in August.
"""


@database_sync_to_async
def workflow_with_upload(owner, mode="react"):
    workflow = services.workflow_create(owner=owner, title="", mode=mode)
    upload = services.document_upload(workflow=workflow, name="notes.md", data=NOTES)
    return workflow, upload


@database_sync_to_async
def stored(workflow):
    workflow.refresh_from_db()
    return (
        workflow,
        list(workflow.events.order_by("seq").values_list("seq", "type")),
        list(workflow.messages.all()),
        list(workflow.documents.all()),
    )


async def test_demo_round_runs_stores_and_settles(alice):
    """With no model configured the demo model runs a whole round through the real tools."""
    workflow, upload = await workflow_with_upload(alice)
    await launcher.start_round(
        workflow_id=workflow.pk, user=alice, text="Summarise my notes", document_ids=[upload.pk]
    )
    assert await launcher.wait_for(workflow.pk) == ChatWorkflow.Status.COMPLETED
    workflow, events, messages, documents = await stored(workflow)

    seqs = [seq for seq, _ in events]
    assert seqs == list(range(1, len(seqs) + 1))
    types = [kind for _, kind in events]
    assert types[0] == "message"  # the user's message opens the round
    for kind in ("round", "taskplan", "step", "plan", "act", "observe", "refine", "review"):
        assert kind in types, kind
    assert types[-1] == "run"
    assert workflow.status == ChatWorkflow.Status.COMPLETED
    assert workflow.title == "Summarise my notes"
    assert workflow.prompt_tokens == workflow.completion_tokens == 0  # the demo counts none
    assert workflow.heartbeat is not None  # the run showed it was alive
    answered = max(m.created for m in messages)
    assert workflow.updated >= answered  # the answer is the workflow's latest activity

    roles = [m.role for m in messages]
    assert roles[0] == ChatMessage.Role.USER
    assert roles[-1] == ChatMessage.Role.ASSISTANT
    actions = [m for m in messages if m.role == ChatMessage.Role.ACTION]
    assert actions and all(m.summary for m in actions)
    assert upload.pk in [d.pk for d in documents]
    upload_row = next(d for d in documents if d.pk == upload.pk)
    assert upload_row.label == "round1_upload"
    produced = [d for d in documents if d.source == ChatDocument.Source.PRODUCED]
    assert produced
    assert all(d.label.startswith("round1_task1_action") for d in produced)


async def test_second_start_is_refused_while_running(alice):
    """One run per workflow: a second message while one runs is refused, clearly."""
    workflow, upload = await workflow_with_upload(alice)
    await launcher.start_round(workflow_id=workflow.pk, user=alice, text="first", document_ids=[])
    with pytest.raises(Exception, match="already running"):
        await launcher.start_round(
            workflow_id=workflow.pk, user=alice, text="second", document_ids=[]
        )
    await launcher.wait_for(workflow.pk)


async def test_watcher_sees_the_round_live_in_order(alice):
    """A connected client receives the stored events live, in seq order, ending in status."""
    workflow, upload = await workflow_with_upload(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to(
        {"action": "send", "text": "Summarise my notes", "documents": [upload.pk]}
    )
    events = await receive_until(communicator, is_final)
    stored_seqs = [e["seq"] for e in events if e["seq"] is not None]
    assert stored_seqs == sorted(stored_seqs)
    assert stored_seqs == list(range(1, len(stored_seqs) + 1))
    assert events[-1]["payload"]["status"] == "completed"
    await communicator.disconnect()


async def test_a_crash_is_shown_and_the_run_still_ends(alice, monkeypatch):
    """An unexpected error in the host becomes a visible error event and a failed run."""
    from workflows.execution import setup

    def broken_tools(**kwargs):
        raise RuntimeError("tool registry exploded")

    monkeypatch.setattr(setup, "build_tools", broken_tools)
    workflow, upload = await workflow_with_upload(alice)
    await launcher.start_round(workflow_id=workflow.pk, user=alice, text="x", document_ids=[])
    assert await launcher.wait_for(workflow.pk) == ChatWorkflow.Status.FAILED
    workflow, events, messages, documents = await stored(workflow)
    assert [kind for _, kind in events] == ["message", "error", "round", "run"]
    assert "tool registry exploded" in workflow.status_reason


async def test_a_user_may_run_only_so_many_rounds_at_once(alice, settings):
    """Past POWERON_MAX_RUNS_PER_USER a send is refused, saying why; the text is not lost."""
    settings.POWERON_MAX_RUNS_PER_USER = 1
    first, _ = await workflow_with_upload(alice)
    second, _ = await workflow_with_upload(alice)
    await launcher.start_round(workflow_id=first.pk, user=alice, text="one", document_ids=[])
    with pytest.raises(launcher.CommandRefused, match="1 run going, the most allowed"):
        await launcher.start_round(workflow_id=second.pk, user=alice, text="two", document_ids=[])
    await launcher.wait_for(first.pk)
    assert not await second.messages.aexists()


async def test_an_upload_not_sent_with_the_message_is_no_document_of_the_round(alice):
    """A file uploaded but not sent (its chip unticked, or waiting for a later message) is
    not given to the agent: the round's documents are the ones sent with its message and the
    earlier rounds' (it used to read every upload, as docList:pending_upload)."""
    workflow, sent = await workflow_with_upload(alice)
    unsent = await database_sync_to_async(services.document_upload)(
        workflow=workflow, name="secret_plan.md", data=b"# Secret plan\n\nDo not read.\n"
    )
    await launcher.start_round(
        workflow_id=workflow.pk, user=alice, text="Summarise my notes", document_ids=[sent.pk]
    )
    assert await launcher.wait_for(workflow.pk) == ChatWorkflow.Status.COMPLETED
    _, _, messages, documents = await stored(workflow)

    answer = next(m for m in messages if m.role == ChatMessage.Role.ASSISTANT and m.round == 1)
    assert "Secret plan" not in answer.content and "Do not read" not in answer.content
    read = {d.name for d in documents if d.source != ChatDocument.Source.UPLOADED}
    assert read and all("Secret" not in name for name in read)
    plans = await database_sync_to_async(list)(
        workflow.events.filter(type="plan").values_list("payload", flat=True)
    )
    assert plans and all("pending_upload" not in str(plan) for plan in plans)
    unsent_now = await ChatDocument.objects.aget(pk=unsent.pk)
    assert unsent_now.label == services.PENDING_UPLOAD_LABEL  # kept for a later message
    # The index any model of a round reads (recorded at its start) does not hold it.
    from workflows.execution.checkpoints import DurableStore

    index = await DurableStore(workflow, None)._index()  # type: ignore[arg-type]
    labels = [ref["label"] for ref in index]
    assert "round1_upload" in labels and services.PENDING_UPLOAD_LABEL not in labels
