"""An AG-UI run across a restart of the server (one Daphne on SQLite, rounds inline): the
client loses its stream when the process dies, asks for the same run again with its
Last-Event-ID once the process is back, and reads on to RUN_FINISHED while the durable
round resumes where it was."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from tests.agui.live import LiveApp, User
from tests.agui.protocol import state_of, text_of, verify
from tests.api.live_app import alice_token
from tests.support.apps import PASSWORD, AppProcesses, app_env
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, select, stop, taskplan

THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)

pytestmark = pytest.mark.timeout(300)


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


def test_a_run_goes_on_after_the_server_restarts(app, model):
    """Killed while Stage 2 is in flight and started again on the same port: the same run
    asked for again after its Last-Event-ID opens where the client was and brings the rest
    of the resumed round, each event once, to RUN_FINISHED and the stored answer."""
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
    tokens = {"run": alice_token(base, ["run"]), "all": alice_token(base, ["read", "run"])}
    live = LiveApp(base, User("alice", PASSWORD, tokens), User("bob", ""))
    body = {"threadId": str(uuid.uuid4()), "runId": "through-a-restart",
            "messages": [{"id": "m", "role": "user", "content": "Think it over"}]}  # fmt: skip
    seen = []
    with live.stream(tokens["run"], body) as (_, events):
        for event in events:
            seen.append(event)
            if event["type"] == "STEP_STARTED":
                break
        deadline = time.monotonic() + 60
        while "ActionParameters" not in model.kinds():  # the slow call is in flight
            assert time.monotonic() < deadline, model.kinds()
            time.sleep(0.05)
        app.processes[-1].kill()  # kill -9
        app.processes[-1].wait()
        with pytest.raises(httpx.HTTPError):
            seen += list(events)
    last = [e["_id"] for e in seen if e["_id"]][-1]
    assert app.web(port=port) == port
    _, rest = live.post(tokens["all"], body, **{"Last-Event-ID": last})  # read replays
    verify(rest)
    assert rest[0]["metadata"]["poweron"]["kind"] == "replay"
    ids = [int(e["_id"]) for e in rest if e["_id"]]
    assert ids == sorted(set(ids)) and ids[0] == int(last)
    assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["result"]["status"] == "completed"
    workflow = rest[0]["metadata"]["poweron"]["workflow"]
    stored, messages = live.stored(live.alice, workflow)
    assert text_of(rest) == messages[-1]["content"]
    assert any("Resumed" in e["payload"]["reason"] for e in stored if e["type"] == "run")
    assert state_of(rest)["status"] == "completed"
    model.assert_complete()
