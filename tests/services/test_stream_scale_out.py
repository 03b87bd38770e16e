"""The event stream through two Daphne processes on PostgreSQL and Redis: a program reading
a workflow's events on one process gets a round that runs on the other, live, in order,
each once; reconnected to the other process with Last-Event-ID, it goes on from there."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.api.live_app import alice_token
from tests.api.sse import HttpStream, is_final
from tests.services.test_scale_out import make_cluster
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, select, stop, taskplan

pytestmark = pytest.mark.services

ANSWER = " ".join(f"word{n}" for n in range(30))


@pytest.fixture
def model():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def cluster(postgres_url, redis_url, tmp_path, model):
    cluster = make_cluster(postgres_url, redis_url, tmp_path, model)
    try:
        yield cluster, (cluster.web(), cluster.web())
    finally:
        cluster.stop()


async def test_a_stream_on_one_process_follows_a_round_on_the_other(cluster, model):
    """Sent to process B (the round runs there), streamed from process A through Redis: every
    event once in seq order with the answer's live frames; a second round read from B after
    A's last id continues without a gap or a duplicate."""
    processes, (port_a, port_b) = cluster
    think = select(
        "ai.process",
        parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
    )
    round_replies = [
        json.dumps(taskplan("Think")),
        json.dumps(think),
        json.dumps(params(aiPrompt="Think")),
        "A thought.",
        json.dumps(stop()),
        FakeReply(content=ANSWER, chunk_delay=0.02),
    ]
    model.add(*round_replies, *round_replies)
    a, b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
    auth = {"Authorization": f"Bearer {alice_token(a, ['read', 'run'])}"}
    async with (
        httpx.AsyncClient(base_url=a, headers=auth, timeout=30) as on_a,
        httpx.AsyncClient(base_url=b, headers=auth, timeout=30) as on_b,
    ):
        workflow = (await on_b.post("/api/v1/workflows", json={"title": "Two"})).json()["id"]
        stream_path = f"/api/v1/workflows/{workflow}/events/stream?until=final"
        send_path = f"/api/v1/workflows/{workflow}/messages"
        async with HttpStream(on_a, stream_path) as stream:
            sent = await on_b.post(send_path, json={"text": "Think it over"})
            assert sent.status_code == 202
            first = await stream.until(is_final)
        last = first[-1].id
        sent = await on_a.post(send_path, json={"text": "Think again"})
        assert sent.status_code == 202
        async with HttpStream(on_b, stream_path, **{"Last-Event-ID": last}) as stream:
            second = await stream.until(is_final)
        stored = (await on_a.get(f"/api/v1/workflows/{workflow}/events?limit=500")).json()
    ids = [int(e.id) for e in first + second if e.id is not None]
    assert ids == list(range(1, len(ids) + 1))
    assert [e.json for e in first + second if e.id is not None] == stored["events"]
    frames = [e for e in first if e.event == "delta" and e.id is None]
    assert frames, "the answer's live frames reach the other process's stream"
    assert all(e.json["payload"]["status"] == "completed" for e in (first[-1], second[-1]))
    ran = f"running round 1 of workflow {workflow}"
    assert ran in processes.logs[1].read_text()  # in B, whose stream A followed
    assert ran not in processes.logs[0].read_text()
