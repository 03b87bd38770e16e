"""The event stream across a restart of the server (the `make run` shape: one Daphne on
SQLite, rounds inline): a program reading a round's events loses the connection when the
process dies, reconnects with Last-Event-ID to the restarted process, and reads on to the
final status with no gap and no duplicate, while the round resumes where it was."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.api.live_app import alice_token
from tests.api.sse import HttpStream, is_final
from tests.support.apps import AppProcesses, app_env
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, select, stop, taskplan

THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)


@pytest.fixture
def model():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def app(model, tmp_path):
    processes = AppProcesses(app_env(tmp_path, model.url), tmp_path)
    try:
        yield processes
    finally:
        processes.stop()


async def test_a_stream_resumes_with_last_event_id_after_the_server_restarts(app, model):
    """Killed while Stage 2 is in flight, the process is started again on the same port;
    the client's reconnect with Last-Event-ID brings the rest of the round (resumed by the
    new process) once each, up to its final status, as /events stores it."""
    model.add(
        json.dumps(taskplan("Think it over")),
        json.dumps(THINK),
        FakeReply(content=json.dumps(params(aiPrompt="Think")), delay=30),  # cut off
        json.dumps(params(aiPrompt="Think")),
        "A thought worth keeping.",
        json.dumps(stop()),
        "The answer, thought over.",
    )
    port = app.web()
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {alice_token(base, ['read', 'run'])}"}
    async with httpx.AsyncClient(base_url=base, headers=auth, timeout=30) as client:
        workflow = (await client.post("/api/v1/workflows", json={"title": "Restart"})).json()
        path = f"/api/v1/workflows/{workflow['id']}/events/stream?until=final"
        seen = []
        async with HttpStream(client, path) as stream:
            sent = await client.post(
                f"/api/v1/workflows/{workflow['id']}/messages", json={"text": "Think it over"}
            )
            assert sent.status_code == 202
            seen += await stream.until(lambda e: e.event == "step")
            while "ActionParameters" not in model.kinds():  # the slow call is in flight
                await asyncio.sleep(0.05)
            app.processes[-1].kill()  # kill -9
            app.processes[-1].wait()
            with pytest.raises((EOFError, httpx.HTTPError)):
                while True:
                    event = await stream.next()
                    if event.data:
                        seen.append(event)
        last = [e.id for e in seen if e.id is not None][-1]
        assert app.web(port=port) == port
        async with HttpStream(client, path, **{"Last-Event-ID": last}) as stream:
            assert stream.response.status_code == 200
            seen += await stream.until(is_final, timeout=60)
        stored = (
            await client.get(f"/api/v1/workflows/{workflow['id']}/events", params={"limit": 500})
        ).json()["events"]
    ids = [int(e.id) for e in seen if e.id is not None]
    assert ids == list(range(1, len(ids) + 1))  # no gap, no duplicate across the two
    assert [e.json for e in seen if e.id is not None] == stored
    assert seen[-1].json["payload"]["status"] == "completed"
    resumed = [e.json for e in seen if e.event == "run"]
    assert any("Resumed" in e["payload"]["reason"] for e in resumed)
    model.assert_complete()
