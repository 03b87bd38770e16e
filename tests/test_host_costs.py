"""What the host costs a run: one model client for every run, events stored a step at a time."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from tests.support.chat_app import workflow_with_upload
from tests.support.priced import one_extract
from workflows import services
from workflows.engine.records.events import PlanEvent, StatusEvent, UsageEvent
from workflows.engine.records.schemas import ActionSelection
from workflows.events import broadcast
from workflows.execution import launcher, recording, setup
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db(transaction=True)


def policy(body: dict) -> object:
    """A reply by what is asked (whatever the order of calls): one extract, then stop."""
    return one_extract(body)


async def run_round(owner) -> str | None:
    workflow, upload = await workflow_with_upload(owner)
    await launcher.start_round(
        workflow_id=workflow.pk, user=owner, text="Summarise", document_ids=[upload.pk]
    )
    return await launcher.wait_for(workflow.pk)


@pytest.mark.usefixtures("durable")
async def test_two_runs_in_one_process_share_one_model_client(alice, model, monkeypatch):
    """Every run uses the process's one client, created once and left open between runs."""
    built = []
    build_llm = setup.build_llm
    monkeypatch.setattr(setup, "build_llm", lambda: built.append(build_llm()) or built[-1])
    model.add(*[policy] * 40)
    assert await run_round(alice) == ChatWorkflow.Status.COMPLETED
    asked = len(model.requests)
    assert await run_round(alice) == ChatWorkflow.Status.COMPLETED
    assert 0 < asked < len(model.requests)  # both runs called the model
    first, second = built
    assert first is not second  # each run its own model (what the server accepts, and so on)
    assert first.client is second.client
    assert not first.client.is_closed()


@pytest.mark.usefixtures("durable")
async def test_a_steps_events_are_stored_together_and_sent_after_commit(alice, monkeypatch):
    """Events emitted between two waits are stored in one transaction, with consecutive
    seqs; each is broadcast only once its transaction has committed."""
    log: list[tuple[str, list[int]]] = []
    record_many, send = recording.record_many, broadcast.broadcast

    def logged_record_many(workflow_id, events):
        stored = record_many(workflow_id, events)
        seqs = [envelope.seq for envelope in stored]
        transaction.on_commit(lambda: log.append(("committed", seqs)))  # at once if committed
        return stored

    async def logged_broadcast(envelope):
        if envelope.seq is not None:
            log.append(("sent", [envelope.seq]))
        return await send(envelope)

    monkeypatch.setattr(recording, "record_many", logged_record_many)
    monkeypatch.setattr(broadcast, "broadcast", logged_broadcast)
    assert await run_round(alice) == ChatWorkflow.Status.COMPLETED  # the demo model

    committed = {1}  # the user's message, stored with its round (round_open) before any run
    batches = []
    for what, seqs in log:
        if what == "committed":
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))) if seqs else True
            committed.update(seqs)
            batches.append(seqs)
        else:
            assert seqs[0] in committed, f"event {seqs[0]} sent before it was committed"
    workflow = await ChatWorkflow.objects.aget(owner=alice)
    types = {
        seq: kind async for seq, kind in workflow.events.values_list("seq", "type").order_by("seq")
    }
    assert sorted(committed) == list(types)
    assert len(batches) < len(committed) / 2  # events that arrive together are stored together
    kinds = [[types[seq] for seq in batch] for batch in batches]
    # A model call's cost and what it led to are stored in one transaction.
    assert any(len(batch) > 1 and batch[0] == "usage" for batch in kinds)


def events(round: int, *ordinals: int):
    return [
        (StatusEvent(round=round, code="info", reason=f"n{ordinal}"), ordinal)
        for ordinal in ordinals
    ]


def test_a_batch_is_stored_in_four_statements_with_one_seq_each(alice):
    """However many events a batch holds: begin, claim the seqs, insert, commit."""
    workflow = services.workflow_create(owner=alice)
    step = {"round": 1, "task": 1, "action": 1}
    batch = [
        (UsageEvent(**step, kind="select", promptTokens=10, completionTokens=2), 1),
        (PlanEvent(**step, step=1, selection=ActionSelection(action="web.search")), 2),
        (StatusEvent(**step, code="info", reason="x"), 3),
    ]
    with CaptureQueriesContext(connection) as queries:
        stored = recording.record_many(workflow.pk, batch)
    assert len(queries) <= 4
    assert [envelope.seq for envelope in stored] == [1, 2, 3]
    assert stored[0].event.workflowTokens == 12
    workflow.refresh_from_db()
    assert (workflow.last_seq, workflow.current_task, workflow.total_tokens) == (3, 1, 12)


def test_a_replayed_batch_stores_only_what_is_new(alice):
    """A resumed round replays its events: those stored already are skipped, the rest get
    the next seqs."""
    workflow = services.workflow_create(owner=alice)
    assert [e.seq for e in recording.record_many(workflow.pk, events(1, 1, 2))] == [1, 2]
    assert recording.record_many(workflow.pk, events(1, 1, 2)) == []
    replayed = recording.record_many(workflow.pk, events(1, 2, 3, 4))
    assert [(e.seq, e.event.reason) for e in replayed] == [(3, "n3"), (4, "n4")]
    assert [e.seq for e in recording.record_many(workflow.pk, events(2, 1))] == [5]


async def test_the_model_client_is_created_at_start_up_not_by_the_first_run(model, monkeypatch):
    """A process that runs rounds creates its client when it starts; runs only reuse it.
    (Counted: clients with connections of their own, each on a bounded HTTP client made for
    it; a copy made for other options, as the start-up rehearsal and each structured call
    make, has its original's or a stand-in's.)"""
    from workflows.engine.model import clients

    created, own = [], []
    bounded = clients.bounded_http_client

    def counted_http_client(*args, **kwargs):
        own.append(bounded(*args, **kwargs))
        return own[-1]

    class Counted(clients.AsyncOpenAI):
        def __init__(self, **options):
            if any(options.get("http_client") is made for made in own):
                created.append(options["base_url"])
            super().__init__(**options)

    monkeypatch.setattr(clients, "bounded_http_client", counted_http_client)
    monkeypatch.setattr(clients, "AsyncOpenAI", Counted)
    await setup.warm_up()
    assert created == [model.url]
    setup.build_llm()
    setup.build_llm()
    assert created == [model.url]


async def test_start_up_rehearses_without_a_request_and_a_failed_rehearsal_only_logs(
    model, monkeypatch, caplog
):
    """warm_up rehearses a call through the client and builds the answer models a round
    opens with (warming.py), sending nothing to the model; when the rehearsal fails, it says
    so in the log and the start goes on."""
    from workflows.engine.model import warming
    from workflows.engine.prompting import narrowed

    narrowed.taskplan_output.cache_clear()
    narrowed._taskplan.cache_clear()
    await setup.warm_up()
    assert model.requests == []
    assert narrowed._taskplan.cache_info().currsize >= 2  # React's and Actionplan's at least

    def broken(*args, **kwargs):
        raise RuntimeError("no catalog")

    monkeypatch.setattr(warming, "prepare_answers", broken)
    await setup.warm_up()
    assert "start-up rehearsal failed" in caplog.text


async def test_a_mistake_in_the_mcp_configuration_is_logged_at_start(settings, caplog):
    """An operator reads what is wrong with POWERON_MCP_SERVERS when the process starts,
    not at the first run."""
    settings.POWERON_MCP_SERVERS = "{bad"
    await setup.warm_up()
    assert "POWERON_MCP_SERVERS" in caplog.text


async def test_start_up_starts_the_document_parser_and_settings_reach_its_limits(settings):
    """warm_up starts the process that parses documents (the first read does not wait for
    it), and the POWERON_DOCUMENT_* settings become the parse limits."""
    from workflows.tools.documents import isolation
    from workflows.tools.documents.extracted import Limits

    isolation.shutdown_zygote()
    assert isolation.zygote_pid() is None
    await setup.warm_up()
    assert isolation.zygote_pid() is not None
    settings.POWERON_DOCUMENT_PARSE_TIMEOUT = 7.5
    settings.POWERON_DOCUMENT_PARSE_MEMORY_MB = 256
    settings.POWERON_DOCUMENT_MAX_XML_ELEMENTS = 5_000
    limits = Limits.from_settings(setup.tool_settings())
    assert (limits.max_seconds, limits.max_memory, limits.max_xml_elements) == (
        7.5, 256_000_000, 5_000
    )  # fmt: skip


@pytest.mark.usefixtures("durable")
async def test_the_durable_warm_up_runs_a_step_and_leaves_no_workflow_behind(monkeypatch, caplog):
    """A process that runs rounds runs DBOS's first step and receive at start (the first
    round then finds them ready) and deletes that workflow; a warm-up that fails is logged
    and deleted too, never raised."""
    from dbos import DBOS

    from workflows.execution import durable

    ran = []
    monkeypatch.setattr(durable, "_nothing", lambda: ran.append("step"))
    await durable.warm_up()
    assert ran == ["step"]
    assert await DBOS.list_workflows_async() == []

    def fails() -> None:
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(durable, "_nothing", fails)
    await durable.warm_up()
    assert "the durable warm-up failed" in caplog.text
    assert await DBOS.list_workflows_async() == []
