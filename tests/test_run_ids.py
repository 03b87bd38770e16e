"""A round's durable run belongs to its app database: a new round never meets the run state
of another database's round (a reset, a restored backup, a second database), and a run
recovered from such state touches nothing here.

The command-line runs are real subprocesses on the embedded default (SQLite, with the run
state in the file beside the app's); the in-process ones run DBOS in the test's loop.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from tests.support.cli import manage, run_workflow
from workflows import services
from workflows.models import ChatWorkflow, WorkflowEvent


def note(directory: Path, name: str, text: str) -> str:
    """A note for the demo model to read (without a document it says it cannot answer)."""
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def reset_app_database(var_dir: Path) -> None:
    """Start the app database afresh, as an operator does (or restore an older copy of it),
    leaving the run state where it is."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        (var_dir / f"db.sqlite3{suffix}").unlink(missing_ok=True)
    result = manage(var_dir, "migrate", "--no-input", "-v", "0")
    assert result.returncode == 0, result.stderr


def test_a_new_round_after_the_app_database_was_reset_runs_for_real(tmp_path):
    """Workflow 1's first round of a fresh app database runs and answers, although the run
    state kept a finished first round of the workflow 1 of the database before it."""
    var_dir = tmp_path / "var"
    assert manage(var_dir, "migrate", "--no-input", "-v", "0").returncode == 0
    sums = note(tmp_path, "sums.txt", "Two and two make four. Three and three make six.")
    first = run_workflow(var_dir, "Summarise the note.", "--document", sums)
    assert first.returncode == 0, first.explain()
    assert (var_dir / "db.sqlite3-dbos.sqlite").exists()  # beside the app database
    assert not (var_dir / "dbos.sqlite").exists()

    reset_app_database(var_dir)
    assert (var_dir / "db.sqlite3-dbos.sqlite").exists()  # the old run state is still there
    rivers = note(tmp_path, "rivers.txt", "Rivers run to the sea. Their water is fresh.")
    second = run_workflow(var_dir, "Summarise the note.", "--document", rivers)

    assert second.returncode == 0, second.explain()
    assert second.workflow == first.workflow == 1
    assert [e["payload"]["status"] for e in second.of("run")][-1] == "completed"
    assert second.of("taskplan"), second.explain()  # the loop ran: not an old run's result
    assert second.answer and second.answer != first.answer, second.explain()


def test_the_run_state_follows_the_sqlite_file_the_app_uses(tmp_path):
    """Pointed at another SQLite file, the app keeps its run state beside that file."""
    var_dir = tmp_path / "var"
    other = tmp_path / "elsewhere" / "other.sqlite3"
    other.parent.mkdir()
    settings = {"DATABASE_URL": f"sqlite:///{other}"}
    assert manage(var_dir, "migrate", "--no-input", "-v", "0", settings=settings).returncode == 0
    sums = note(tmp_path, "sums.txt", "Two and two make four.")
    run = run_workflow(var_dir, "Summarise the note.", "--document", sums, settings=settings)
    assert run.returncode == 0, run.explain()
    assert (other.parent / "other.sqlite3-dbos.sqlite").exists()
    assert not (var_dir / "db.sqlite3-dbos.sqlite").exists()


def test_every_round_gets_a_run_id_of_its_own(alice, db):
    """Two rounds of one workflow, and the first rounds of two workflows, never share a
    durable id; the id names the workflow and the round for people reading DBOS's tables."""
    from workflows.execution import durable

    ids = []
    for _ in range(2):
        workflow = services.workflow_create(owner=alice)
        for round in (1, 2):
            opened, _, _ = services.round_open(
                workflow_id=workflow.pk, owner=alice, text="Go", document_ids=[]
            )
            run = durable.RunRef.of(opened)
            assert run.round == round and run.run_id is not None
            assert run.dbos_id.startswith(f"poweron-{workflow.pk}-round-{round}-")
            ids.append(run.dbos_id)
            ChatWorkflow.objects.filter(pk=workflow.pk).update(status="completed")
    assert len(set(ids)) == 4


@pytest.mark.django_db(transaction=True)
async def test_a_run_that_is_not_this_databases_round_touches_nothing(alice, durable):
    """A round DBOS runs under an id this database did not give its current round (what a
    recovery finds in run state that outlived its app database) ends at once: no event, no
    status, no message is written to the workflow that has its number here."""
    from dbos import DBOS, SetWorkflowID

    from workflows.execution import runner

    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    workflow, message, _ = await database_sync_to_async(services.round_open)(
        workflow_id=workflow.pk, owner=alice, text="Mine", document_ids=[]
    )
    events_before = await WorkflowEvent.objects.filter(workflow=workflow).acount()
    stranger = durable.RunRef(workflow.pk, 1, uuid.uuid4())  # same workflow and round number
    with SetWorkflowID(stranger.dbos_id):
        handle = await DBOS.start_workflow_async(runner.round_workflow, workflow.pk, message.pk)
    assert await handle.get_result() == runner.FOREIGN
    await workflow.arefresh_from_db()
    assert workflow.status == ChatWorkflow.Status.RUNNING  # as round_open left it
    assert await WorkflowEvent.objects.filter(workflow=workflow).acount() == events_before
    assert await workflow.messages.acount() == 1


@pytest.mark.django_db(transaction=True)
async def test_a_round_begun_before_run_ids_still_resumes(alice, durable, settings):
    """A round opened before run ids (none recorded, the id of before) that was running in
    this process when it stopped resumes when the process starts again under the new names,
    and ends completed."""
    import sqlalchemy as sa
    from dbos import DBOS

    from workflows.execution import launcher, runner

    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    upload = await database_sync_to_async(services.document_upload)(
        workflow=workflow, name="notes.txt", data=b"PowerOn keeps every run it begins."
    )
    workflow, message, _ = await database_sync_to_async(services.round_open)(
        workflow_id=workflow.pk, owner=alice, text="Summarise the note", document_ids=[upload.pk]
    )
    await ChatWorkflow.objects.filter(pk=workflow.pk).aupdate(run_id=None)  # as before
    earlier = durable.RunRef(workflow.pk, 1)
    DBOS.destroy()
    await durable.launch(queues=[])  # this process takes nothing from the queue
    await runner.start(earlier, message.pk, queued=True)  # recorded, not started
    DBOS.destroy()  # the process stops

    # What the release before wrote for a round its process ("local") had begun.
    engine = sa.create_engine(durable.system_database_url())
    with engine.begin() as connection:
        connection.execute(
            sa.text(
                "UPDATE workflow_status SET status = 'PENDING', executor_id = :who, "
                "queue_name = NULL WHERE workflow_uuid = :id"
            ),
            {"who": settings.POWERON_EXECUTOR_ID, "id": earlier.dbos_id},
        )
    engine.dispose()

    await durable.launch()  # the process starts again
    assert await launcher.wait_for(workflow.pk, timeout=60) == ChatWorkflow.Status.COMPLETED
    assert durable.EXECUTOR.startswith(f"{settings.POWERON_EXECUTOR_ID}@")


@pytest.mark.django_db(transaction=True)
async def test_the_process_recovers_only_runs_of_its_own_database(alice, durable, settings):
    """Run state shared with another app database: a pending round of the other one (same
    process name, same workflow number) is not recovered by this database's process."""
    import sqlalchemy as sa
    from dbos import DBOS

    from workflows.execution import runner

    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    workflow, message, _ = await database_sync_to_async(services.round_open)(
        workflow_id=workflow.pk, owner=alice, text="Theirs", document_ids=[]
    )
    theirs = durable.RunRef(workflow.pk, 1, uuid.uuid4())
    DBOS.destroy()
    await durable.launch(queues=[])  # this process takes nothing from the queue
    await runner.start(theirs, message.pk, queued=True)  # recorded, not started
    DBOS.destroy()
    engine = sa.create_engine(durable.system_database_url())
    with engine.begin() as connection:  # begun by "local" of another app database
        connection.execute(
            sa.text(
                "UPDATE workflow_status SET status = 'PENDING', executor_id = :who, "
                "queue_name = NULL WHERE workflow_uuid = :id"
            ),
            {"who": f"{settings.POWERON_EXECUTOR_ID}@0123456789ab", "id": theirs.dbos_id},
        )
    engine.dispose()

    await durable.launch()
    found = await DBOS.get_workflow_status_async(theirs.dbos_id)
    assert found is not None and found.status == "PENDING"  # left alone, not resumed
    assert found.executor_id == f"{settings.POWERON_EXECUTOR_ID}@0123456789ab"
    assert not await WorkflowEvent.objects.filter(workflow=workflow, type="taskplan").aexists()
