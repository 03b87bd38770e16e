"""Runs cut off by a crash or restart are found and settled with a final status."""

from datetime import timedelta
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.core.management import call_command
from django.utils import timezone

from workflows import services
from workflows.engine.records.events import DeltaEvent, RoundEvent, StepEvent, TaskEvent
from workflows.events import broadcast
from workflows.execution import recording, settle
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db


def active(owner, status, heartbeat_age=None):
    workflow = services.workflow_create(owner=owner)
    workflow.status = status
    workflow.current_round = 1
    if heartbeat_age is not None:
        workflow.heartbeat = timezone.now() - timedelta(seconds=heartbeat_age)
    workflow.save()
    return workflow


def test_restart_settles_every_cut_off_run(alice):
    """On a single-process start, running becomes failed and stopping becomes stopped."""
    running = active(alice, ChatWorkflow.Status.RUNNING)
    stopping = active(alice, ChatWorkflow.Status.STOPPING)
    idle = services.workflow_create(owner=alice)
    out = StringIO()
    call_command("settle_runs", stdout=out)
    for workflow in (running, stopping, idle):
        workflow.refresh_from_db()
    assert running.status == ChatWorkflow.Status.FAILED
    assert stopping.status == ChatWorkflow.Status.STOPPED
    assert idle.status == ChatWorkflow.Status.IDLE
    assert "cut off" in running.status_reason
    # A round that never began still gets its record (exports list every round), then the
    # run's final status.
    record, final = running.events.order_by("seq")
    assert (record.type, record.payload["status"], record.round) == ("round", "failed", 1)
    assert (final.type, final.payload["status"], final.round) == ("run", "failed", 1)
    assert "Settled 2" in out.getvalue()


def test_stale_after_spares_runs_with_a_recent_heartbeat(alice):
    """With several processes only runs whose heartbeat went quiet are settled."""
    alive = active(alice, ChatWorkflow.Status.RUNNING, heartbeat_age=5)
    dead = active(alice, ChatWorkflow.Status.RUNNING, heartbeat_age=600)
    call_command("settle_runs", "--stale-after", "60", stdout=StringIO())
    alive.refresh_from_db()
    dead.refresh_from_db()
    assert alive.status == ChatWorkflow.Status.RUNNING
    assert dead.status == ChatWorkflow.Status.FAILED


def test_settling_closes_the_open_work_of_the_cut_off_round(alice):
    """The round, task and step a dead process left running are closed as failed, the
    answer it was streaming is kept as a failed message, then the final status; every
    stored event is broadcast to viewers."""
    workflow = active(alice, ChatWorkflow.Status.RUNNING)
    for event in [
        RoundEvent(round=1, status="started", mode="react", model="m"),
        TaskEvent(round=1, task=1, status="pending", objective="a"),
        TaskEvent(round=1, task=1, status="running", objective="a"),
        StepEvent(round=1, task=1, action=1, status="started", step=1),
        DeltaEvent(round=1, key="round1_answer", text="Half an ans", offset=0),
    ]:
        recording.record(workflow.pk, event)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(broadcast.viewers_group(workflow.pk), channel)

    call_command("settle_runs", stdout=StringIO())

    closing = [(e.type, e.payload.get("status")) for e in workflow.events.filter(seq__gt=5)]
    assert closing == [
        ("message", "failed"),
        ("step", "failed"),
        ("task", "failed"),
        ("round", "failed"),
        ("run", "failed"),
    ]
    answer = workflow.messages.get(role="assistant")
    assert (answer.content, answer.status) == ("Half an ans", "failed")
    received = [async_to_sync(layer.receive)(channel)["seq"] for _ in closing]
    assert received == [6, 7, 8, 9, 10]


def test_a_stop_shows_the_documents_its_step_wrote_and_keeps_the_rounds_model(alice):
    """A stop that lands between a document's write and its event: the document is shown
    (the page had two of a report's three files, the export all three), before the step is
    closed; the closed step names the round's model, so the demo's says "demo"."""
    from workflows.engine.demo.policy import DEMO_LABEL
    from workflows.engine.records.events import DocumentEvent

    workflow = active(alice, ChatWorkflow.Status.STOPPING)
    label = "round1_task1_action1_report"
    written = [
        services.document_create(
            workflow=workflow, name=name, data=b"x", label=label, round=1, key=f"1:1:1:{n}"
        )
        for n, name in enumerate(["r.md", "r.html", "r.pdf"], start=1)
    ]
    for event in [
        RoundEvent(round=1, status="started", mode="react", model=DEMO_LABEL),
        TaskEvent(round=1, task=1, status="running", objective="a"),
        StepEvent(round=1, task=1, action=1, status="started", step=1),
        *(DocumentEvent(round=1, task=1, action=1, document=d.as_ref()) for d in written[:2]),
    ]:
        recording.record(workflow.pk, event)

    stored = settle.run_end(workflow.pk, ChatWorkflow.Status.STOPPED)

    kinds = [(e.event.type, getattr(e.event, "status", "")) for e in stored]
    assert kinds[0] == ("document", "") and kinds[1] == ("step", "stopped")
    assert stored[0].event.document.name == "r.pdf" and stored[0].event.action == 1
    assert stored[1].event.model == DEMO_LABEL
    shown = list(workflow.events.filter(type="document"))
    assert sorted(e.payload["document"]["name"] for e in shown) == ["r.html", "r.md", "r.pdf"]


@pytest.mark.django_db(transaction=True)
async def test_settling_leaves_a_round_the_durable_runtime_will_run(alice, media_root):
    """A queued round (on the durable queue, no worker yet) is neither failed nor touched;
    a "running" one that DBOS never heard of is settled as failed."""
    from dbos import DBOS

    from workflows.execution import durable, runner

    await durable.launch(queues=[])  # this process takes nothing from the queue
    try:
        queued = await database_sync_to_async(active)(alice, ChatWorkflow.Status.QUEUED)
        orphan = await database_sync_to_async(active)(alice, ChatWorkflow.Status.RUNNING)
        message = await database_sync_to_async(services.message_create)(
            workflow=queued, role="user", content="wait", round=1
        )
        await runner.start(durable.RunRef(queued.pk, 1), message.pk, queued=True)
        settled = await database_sync_to_async(settle.cut_off_runs)()
        assert list(settled) == [orphan.pk]
        await queued.arefresh_from_db()
        await orphan.arefresh_from_db()
        assert queued.status == ChatWorkflow.Status.QUEUED
        assert not await queued.events.aexists()
        assert orphan.status == ChatWorkflow.Status.FAILED
        assert "before it could start" in orphan.status_reason

        # A round being handed to its run (opened, not yet held by DBOS) is spared by the
        # watch of every process, which settles only runs quiet for the failover delay.
        opening = await database_sync_to_async(services.workflow_create)(owner=alice)
        await database_sync_to_async(services.round_open)(
            workflow_id=opening.pk, owner=alice, text="Go", document_ids=[], queued=True
        )
        watched = await database_sync_to_async(settle.cut_off_runs)(older_than_seconds=60)
        assert opening.pk not in watched
    finally:
        DBOS.destroy()


def test_a_run_back_on_the_queue_is_said_to_wait_once_whoever_watches(alice):
    """A run whose process died and that DBOS put back on its queue shows as queued; when
    several processes notice it, the event is stored once."""
    running = active(alice, ChatWorkflow.Status.RUNNING, heartbeat_age=120)
    first = settle.waits_again(running)
    assert first is not None and first.event.status == "queued"
    assert settle.waits_again(running) is None  # another process saw it first
    running.refresh_from_db()
    assert running.status == ChatWorkflow.Status.QUEUED
    assert running.events.filter(type="run").count() == 1


def test_an_ended_round_never_looks_alive_again(alice):
    """A round resumed by a crash that came just after its end ("Resumed after an
    interruption.") or a stop that crossed its end ("Stop requested.") stores nothing: the
    round's last run event stays its final one, for the page and for a reload."""
    from workflows.events.contract import RunEvent
    from workflows.execution import launcher

    workflow = active(alice, ChatWorkflow.Status.RUNNING)
    settle.run_end(workflow.pk, ChatWorkflow.Status.COMPLETED, "Done.")
    resumed = RunEvent(round=1, status="running", reason="Resumed after an interruption.")

    assert recording.record(workflow.pk, resumed) is None
    assert launcher.stopping_record(workflow.pk) is None
    runs = workflow.events.filter(type="run").order_by("seq")
    assert [row.payload["status"] for row in runs] == ["completed"]
    # The next round is a round of its own: it runs.
    assert recording.record(workflow.pk, resumed.model_copy(update={"round": 2})) is not None


@pytest.mark.django_db(transaction=True)
async def test_a_round_a_worker_just_took_after_a_long_wait_does_not_make_it_look_dead(
    alice, media_root, settings
):
    """A round that waited in the queue longer than the failover delay, then was taken by a
    live worker that has not beaten for it yet, is quiet only by its heartbeat: that worker
    is not taken for dead (its other runs would run twice). Once DBOS's record of the take
    is as old as the failover delay too, it is."""
    import sqlalchemy as sa
    from dbos import DBOS

    from workflows.execution import durable, failover, runner

    settings.POWERON_FAILOVER_SECONDS = 60
    await durable.launch(queues=[])  # this process ("local") takes nothing from the queue
    try:
        workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
        workflow, message, _ = await database_sync_to_async(services.round_open)(
            workflow_id=workflow.pk, owner=alice, text="Go", document_ids=[], queued=True
        )
        run = durable.RunRef.of(workflow)
        await runner.start(run, message.pk, queued=True)
        waited = timezone.now() - timedelta(seconds=120)
        await ChatWorkflow.objects.filter(pk=workflow.pk).aupdate(heartbeat=waited)
        engine = sa.create_engine(durable.system_database_url())

        def taken_by_worker(at_ms: int) -> None:
            """What a dequeue by the worker "worker-1" writes (DBOS's own claim)."""
            with engine.begin() as connection:
                connection.execute(
                    sa.text(
                        "UPDATE workflow_status SET status = 'PENDING', executor_id = "
                        "'worker-1', updated_at = :at WHERE workflow_uuid = :id"
                    ),
                    {"at": at_ms, "id": run.dbos_id},
                )

        now_ms = int(timezone.now().timestamp() * 1000)
        await database_sync_to_async(taken_by_worker)(now_ms)
        assert await failover.dead_executors(exclude="local") == set()
        await database_sync_to_async(taken_by_worker)(now_ms - 120_000)
        assert await failover.dead_executors(exclude="local") == {"worker-1"}
        engine.dispose()
    finally:
        DBOS.destroy()
