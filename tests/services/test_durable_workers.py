"""Worker mode on PostgreSQL and Redis: rounds wait on a durable queue; a worker killed for
good has its rounds taken over by another; a round sent while no worker runs starts when
one comes up. Nothing is lost, run twice or left "running"."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time

import pytest

from tests.live import is_final
from tests.services.test_scale_out import THINK, make_cluster
from tests.support.apps import sign_in_and_create_workflow
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, review, stop, taskplan
from tests.support.sockets import connect

pytestmark = pytest.mark.services

FAILOVER = 6
RUNS = 20
REPLIES = {
    "TaskPlan": taskplan("Think it over"),
    "ActionSelection": THINK,
    "ActionParameters": params(aiPrompt="Think it through"),
    "RefinementDecision": stop(),
    "TaskReview": review(),
}


def policy(body: dict) -> FakeReply:
    """Every run gets the same one-step round, each call taking 0.3 s: many runs can share
    the server, and a killed worker always has calls in flight."""
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    if name in REPLIES:
        return FakeReply(content=json.dumps(REPLIES[name]), delay=0.3)
    return FakeReply(content="Done." if body.get("stream") else "A thought.", delay=0.3)


@pytest.fixture
def model():
    with FakeOpenAIServer([policy] * 10_000) as server:
        yield server


@pytest.fixture
def cluster(postgres_url, redis_url, tmp_path, model):
    """One web process (it never runs rounds) on PostgreSQL and Redis, workers added by tests."""
    cluster = make_cluster(
        postgres_url,
        redis_url,
        tmp_path,
        model,
        POWERON_RUNNER="worker",
        POWERON_FAILOVER_SECONDS=str(FAILOVER),
        POWERON_MAX_RUNS_PER_USER="50",
        POWERON_WORKER_CONCURRENCY="4",
        POWERON_QUEUE_POLL_SECONDS="0.2",
    )
    try:
        yield cluster
    finally:
        cluster.stop()


async def send_and_watch(port: int, cookie: str, workflow_id: int, text: str) -> list[dict]:
    """Send one message and read its events to the final status."""
    headers = {"Cookie": cookie}
    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    events: list[dict] = []
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": text}))
        async with asyncio.timeout(120):
            while not events or not is_final(events[-1]):
                events.append(json.loads(await socket.recv()))
    return events


def check_once(events: list[dict]) -> None:
    """One history: gap-free seqs each once, one answer, one final status (completed)."""
    seqs = [e["seq"] for e in events if e["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    answers = [e for e in events if e["type"] == "message" and e["payload"]["role"] == "assistant"]
    assert len(answers) == 1
    assert [e["payload"]["status"] for e in events if is_final(e)] == ["completed"]


async def test_a_worker_killed_for_good_has_its_rounds_taken_over(cluster):
    """20 rounds on two workers; one worker is killed -9 mid-way and never comes back: every
    round completes exactly once, within the failover delay plus a margin."""
    port = cluster.web()
    first = cluster.worker(executor_id="w1")
    cluster.worker(executor_id="w2")
    cookie, _ = sign_in_and_create_workflow(port)
    workflows = [sign_in_and_create_workflow(port, cookie=cookie)[1] for _ in range(RUNS)]
    started = time.monotonic()
    watchers = [
        asyncio.create_task(send_and_watch(port, cookie, w, f"Think #{n}"))
        for n, w in enumerate(workflows)
    ]
    await asyncio.sleep(2)  # both workers have rounds in flight
    first.kill()
    killed_at = time.monotonic() - started
    results = await asyncio.gather(*watchers)
    took = time.monotonic() - started
    for events in results:
        check_once(events)
    resumed = sum(
        any(e["type"] == "run" and e["payload"]["reason"].startswith("Resumed") for e in events)
        for events in results
    )
    assert resumed >= 1  # the killed worker's rounds were taken over and resumed
    assert "Taking over the runs of executors ['w1@" in "".join(  # w1, this database's
        log.read_text() for log in cluster.logs
    )
    print(f"{RUNS} rounds, w1 killed at {killed_at:.1f} s: done in {took:.1f} s, {resumed} resumed")
    assert took < killed_at + FAILOVER + 30


async def test_a_round_sent_while_no_worker_runs_starts_when_one_comes_up(cluster):
    """The message is stored and shown at once; the round waits as queued (nothing is lost
    when no worker listens) and runs when a worker starts."""
    port = cluster.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    headers = {"Cookie": cookie}
    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    async with connect(url, additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": "Think while nobody works"}))
        first = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert (first["type"], first["payload"]["role"]) == ("message", "user")
        queued = json.loads(await asyncio.wait_for(socket.recv(), 10))
        assert (queued["type"], queued["payload"]["status"]) == ("run", "queued")
        await asyncio.sleep(3)  # longer than any hand-over would keep a message
        cluster.worker(executor_id="late")
        events = [first, queued]
        async with asyncio.timeout(60):
            while not is_final(events[-1]):
                events.append(json.loads(await socket.recv()))
    check_once(events)


async def watch_until(socket, done, events: list[dict], seconds: float) -> list[dict]:
    """Read events into `events` until one satisfies `done`."""
    async with asyncio.timeout(seconds):
        while not events or not done(events[-1]):
            events.append(json.loads(await socket.recv()))
    return events


@contextlib.asynccontextmanager
async def round_of_a_killed_worker(cluster, text: str):
    """A web process and one worker; a round is sent and, once its first action is chosen,
    the worker is killed -9. Yields the viewer's socket and the events read so far."""
    port = cluster.web()
    worker = cluster.worker(executor_id="doomed")
    cookie, workflow_id = sign_in_and_create_workflow(port)
    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    async with connect(url, additional_headers={"Cookie": cookie}) as socket:
        await socket.send(json.dumps({"action": "send", "text": text}))
        events = await watch_until(socket, lambda e: e["type"] == "plan", [], 60)
        worker.kill()
        yield socket, events


async def test_a_round_whose_worker_died_waits_as_queued_then_a_new_worker_ends_it(cluster):
    """The only worker is killed -9 mid-round: viewers see the round wait as queued (not
    "running" for ever) once the failover delay has passed, and a worker that comes up
    later resumes and completes it."""
    async with round_of_a_killed_worker(cluster, "Think while I pull the plug") as (
        socket,
        events,
    ):
        waits = lambda e: e["type"] == "run" and e["payload"]["status"] == "queued"  # noqa: E731
        await watch_until(socket, waits, events, FAILOVER + 20)
        assert "waits for another" in events[-1]["payload"]["reason"]
        cluster.worker(executor_id="rescuer")
        await watch_until(socket, is_final, events, 60)
    assert events[-1]["payload"]["status"] == "completed"


async def test_stopping_a_round_whose_worker_died_ends_it(cluster):
    """Stop reaches a round whose worker was killed -9 and no other took it: it ends as
    stopped once the failover delay has passed (it stayed "stopping" for good), and the
    workflow takes a new message."""
    async with round_of_a_killed_worker(cluster, "Think, then be stopped") as (socket, events):
        await socket.send(json.dumps({"action": "stop"}))
        await watch_until(socket, is_final, events, FAILOVER + 20)
        assert events[-1]["payload"]["status"] == "stopped"
        assert [e["payload"]["status"] for e in events if e["type"] == "round"][-1] == "stopped"
        await socket.send(json.dumps({"action": "send", "text": "And again"}))
        again = await watch_until(socket, lambda e: e["type"] == "message", [], 10)
    assert again[-1]["payload"]["role"] == "user"  # accepted: the workflow is free again
