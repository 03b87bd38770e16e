"""Two Daphne processes on PostgreSQL and Redis: a viewer on one sees a run on the other,
and its stop reaches the process that runs it."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.live import is_final as final
from tests.support.apps import AppProcesses, app_env, sign_in_and_create_workflow
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, select, stop, taskplan
from tests.support.sockets import connect

pytestmark = pytest.mark.services


@pytest.fixture
def model():
    with FakeOpenAIServer() as server:
        yield server


THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)


def make_cluster(postgres_url, redis_url, tmp_path, model, **extra: str) -> AppProcesses:
    env = app_env(
        tmp_path,
        model.url,
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_url,
        SECRET_KEY="scale-out-test-key-" + "x" * 40,
        **extra,
    )
    return AppProcesses(env, tmp_path)


@pytest.fixture
def cluster(postgres_url, redis_url, tmp_path, model):
    """Two web processes, runs inline in whichever received the message."""
    cluster = make_cluster(postgres_url, redis_url, tmp_path, model)
    try:
        yield model, (cluster.web(), cluster.web())
    finally:
        cluster.stop()


@pytest.fixture
def worker_cluster(postgres_url, redis_url, tmp_path, model):
    """One web process that only serves sockets, and one run_workers process."""
    cluster = make_cluster(postgres_url, redis_url, tmp_path, model, POWERON_RUNNER="worker")
    try:
        port = cluster.web()
        yield model, port, cluster.worker(), cluster
    finally:
        cluster.stop()


async def test_viewer_on_one_process_sees_and_stops_a_run_on_the_other(cluster):
    """Events of a run in process B reach a viewer on process A in seq order; A's stop
    cancels B's model call and the run ends as stopped."""
    model, (port_a, port_b) = cluster
    # web.search is not in the catalog here (no provider): select an action that is.
    model.add(taskplan("Think"), select("ai.process"), FakeReply(content="{}", delay=60))
    cookie, workflow_id = sign_in_and_create_workflow(port_a)
    headers = {"Cookie": cookie}
    path = f"/ws/workflows/{workflow_id}/?format=json"
    async with (
        connect(f"ws://127.0.0.1:{port_a}{path}", additional_headers=headers) as viewer,
        connect(f"ws://127.0.0.1:{port_b}{path}", additional_headers=headers) as sender,
    ):
        await sender.send(json.dumps({"action": "send", "text": "Think hard"}))
        seen = []
        while not seen or seen[-1]["type"] != "plan":
            seen.append(json.loads(await asyncio.wait_for(viewer.recv(), 20)))
        await viewer.send(json.dumps({"action": "stop"}))
        while not final(seen[-1]):
            seen.append(json.loads(await asyncio.wait_for(viewer.recv(), 20)))
    seqs = [event["seq"] for event in seen if event["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seen[-1]["payload"]["status"] == "stopped"
    # The run ended while the parameters call still waited for its 60 s reply.
    assert model.delivered == len(model.requests) - 1


async def run_until(socket, predicate) -> list[dict]:
    events = []
    while not events or not predicate(events[-1]):
        events.append(json.loads(await asyncio.wait_for(socket.recv(), 20)))
    return events


async def test_worker_runs_the_round_and_the_web_process_streams_it(worker_cluster):
    """With POWERON_RUNNER=worker the run executes in run_workers; the socket on the web
    process sees it live, and a stop from the socket reaches the worker."""
    model, port, worker, cluster = worker_cluster
    model.add(taskplan("Think"), select("ai.process"), FakeReply(content="{}", delay=60))
    cookie, workflow_id = sign_in_and_create_workflow(port)
    headers = {"Cookie": cookie}
    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": "Think hard"}))
        await run_until(socket, lambda e: e["type"] == "plan")
        await socket.send(json.dumps({"action": "stop"}))
        events = await run_until(socket, final)
    assert events[-1]["payload"]["status"] == "stopped"
    ran = f"running round 1 of workflow {workflow_id}"
    assert ran in cluster.logs[-1].read_text()  # in the worker,
    assert ran not in cluster.logs[0].read_text()  # never in the web process


async def test_sigterm_hands_a_workers_round_back_and_another_resumes_it(worker_cluster):
    """A worker asked to shut down leaves its round pending (shown as queued); the next
    worker resumes it where it was and it completes, never left "running"."""
    model, port, worker, cluster = worker_cluster
    model.add(
        taskplan("Think"),
        FakeReply(content=json.dumps(THINK), delay=60),  # cut off by the shutdown
        THINK,
        params(aiPrompt="Think it through"),
        "A thought.",
        stop(),
        "Done.",
    )
    cookie, workflow_id = sign_in_and_create_workflow(port)
    headers = {"Cookie": cookie}
    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": "Think hard"}))
        await run_until(socket, lambda e: e["type"] == "step")
        while len(model.requests) < 2:  # the slow selection call is in flight
            await asyncio.sleep(0.05)
        worker.terminate()
        handed = await run_until(socket, lambda e: e["type"] == "run")
        assert handed[-1]["payload"]["status"] == "queued"
        assert worker.wait(timeout=15) == 0
        cluster.worker()  # the next worker takes it from the queue
        events = await run_until(socket, final)
    assert events[-1]["payload"]["status"] == "completed"
    assert any(e["type"] == "run" and e["payload"]["status"] == "running" for e in events)
    seqs = [e["seq"] for e in handed + events if e["seq"] is not None]
    assert seqs == sorted(set(seqs))  # no duplicate
    assert "handed back 1 round(s)" in cluster.logs[1].read_text()
    model.assert_complete()
