"""A round survives `kill -9` of the one process that runs it (the `make run` shape: Daphne
on SQLite): restarted, the process resumes the round from its last completed step.

The model is the fake server with replies slow enough to kill mid-step. After each crash:
the round completes; the model saw every completed call once and the cut-off one at most
once more; the event log a reconnecting viewer reads is gap-free without duplicates; every
document exists once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import httpx
import pytest

from tests.live import is_final
from tests.support.apps import AppProcesses, app_env, sign_in_and_create_workflow
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, select, stop, taskplan
from tests.support.sockets import connect

THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)
ANSWER = " ".join(f"word{n}" for n in range(40))
SLOW = 30  # seconds: far longer than any test waits, so the kill lands inside the call


def script(slow: str) -> list:
    """One ai.process step then the answer; the call named `slow` is cut off the first time
    (its scripted reply never arrives) and answered on the retry."""
    calls = {
        "taskplan": json.dumps(taskplan("Think it over")),
        "select": json.dumps(THINK),
        "parameters": json.dumps(params(aiPrompt="Think it through")),
        "tool": "A thought worth keeping.",
        "refine": json.dumps(stop()),  # met with evidence: no review call
        "final": ANSWER,
    }
    replies: list = []
    for name, content in calls.items():
        if name == slow:
            chunked = {"chunk_delay": 0.3} if name == "final" else {"delay": SLOW}
            replies.append(FakeReply(content=content, **chunked))
        replies.append(FakeReply(content=content))
    return replies


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


async def events_until(socket, predicate, timeout: float = 30) -> list[dict]:
    events = []
    async with asyncio.timeout(timeout):
        while not events or not predicate(events[-1]):
            events.append(json.loads(await socket.recv()))
    return events


async def crash_and_resume(app, model, *, kill_when) -> tuple[list[dict], int, str, float]:
    """Start a round, kill -9 the process when `kill_when(model)`, restart it, reconnect,
    and read to the end. Returns every event seen, the workflow, its cookie, recovery time."""
    port = app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    headers = {"Cookie": cookie}
    path = f"/ws/workflows/{workflow_id}/?format=json"
    seen: list[dict] = []
    async with connect(f"ws://127.0.0.1:{port}{path}", additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": "Think it over"}))
        while not kill_when(model, seen):
            try:
                async with asyncio.timeout(0.05):
                    seen.append(json.loads(await socket.recv()))
            except TimeoutError:
                pass
        app.processes[-1].kill()  # kill -9, mid-step
        app.processes[-1].wait()
    killed = time.monotonic()
    port = app.web()
    last = max(e["seq"] for e in seen if e["seq"] is not None)
    url = f"ws://127.0.0.1:{port}{path}&after={last}"
    async with connect(url, additional_headers=headers) as socket:
        seen += await events_until(socket, is_final)
    return seen, workflow_id, cookie, time.monotonic() - killed


def check_one_history(seen: list[dict]) -> None:
    """Stored events: seq 1..n, each once; a single final status, the last."""
    seqs = [e["seq"] for e in seen if e["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    finals = [e for e in seen if is_final(e)]
    assert len(finals) == 1 and finals[0] is seen[-1]
    assert finals[0]["payload"]["status"] == "completed"


def export(port: int, workflow_id: int, cookie: str) -> dict:
    response = httpx.get(
        f"http://127.0.0.1:{port}/workflows/{workflow_id}/export.json",
        headers={"Cookie": cookie},
    )
    return response.json()


def requests_by_kind(model: FakeOpenAIServer) -> Counter:
    names = {"TaskPlan": "taskplan", "ActionSelection": "select", "ActionParameters":
             "parameters", "RefinementDecision": "refine", "TaskReview": "review",
             "text": "tool", "final": "final"}  # fmt: skip
    return Counter(names[kind] for kind in model.kinds())


def asked(model: FakeOpenAIServer, kind: str) -> bool:
    return requests_by_kind(model)[kind] >= 1


@pytest.mark.parametrize("cut", ["parameters", "tool"])
async def test_a_round_resumes_after_kill_9_during_a_model_call_or_a_tool(app, model, cut):
    """Killed while a model call (Stage 2) or a tool (ai.process and its own model call) is
    in flight: the round resumes, repeating only that call."""
    model.add(*script(cut))
    seen, workflow_id, cookie, recovery = await crash_and_resume(
        app, model, kill_when=lambda m, _: asked(m, cut)
    )
    check_one_history(seen)
    calls = requests_by_kind(model)
    assert calls[cut] == 2  # cut off once, made again on resume
    assert all(n == 1 for kind, n in calls.items() if kind != cut), calls
    model.assert_complete()
    data = export(app.ports[-1], workflow_id, cookie)
    processed = [d for d in data["documents"] if d["label"].endswith("_processed")]
    assert len(processed) == 1  # written once
    resumed = [e for e in seen if e["type"] == "run" and e["payload"]["status"] == "running"]
    assert resumed and "Resumed" in resumed[0]["payload"]["reason"]
    print(f"cut during {cut}: recovered in {recovery:.1f} s")


async def test_a_round_resumes_after_kill_9_during_the_streamed_answer(app, model):
    """Killed while the answer streams: on resume it is streamed again as a new attempt and
    stored whole, once."""
    model.add(*script("final"))

    def mid_stream(_model, seen) -> bool:
        return sum(e["type"] == "delta" for e in seen) >= 3

    seen, workflow_id, cookie, recovery = await crash_and_resume(app, model, kill_when=mid_stream)
    check_one_history(seen)
    calls = requests_by_kind(model)
    assert calls["final"] == 2 and all(n == 1 for k, n in calls.items() if k != "final")
    attempts = {e["payload"]["attempt"] for e in seen if e["type"] == "delta"}
    assert len(attempts) == 2  # the cut-off stream and the complete one
    answers = [e for e in seen if e["type"] == "message" and e["payload"]["role"] == "assistant"]
    assert len(answers) == 1 and answers[0]["payload"]["content"] == ANSWER
    print(f"cut mid-stream: recovered in {recovery:.1f} s")


async def test_a_stopped_round_is_not_resumed_after_a_restart(app, model):
    """Stop during a model call cancels it (its reply is never delivered); after kill -9 and
    a restart the stopped round stays stopped: no model call, no new event."""
    model.add(*script("parameters"))
    port = app.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    headers = {"Cookie": cookie}
    path = f"/ws/workflows/{workflow_id}/?format=json"
    async with connect(f"ws://127.0.0.1:{port}{path}", additional_headers=headers) as socket:
        await socket.send(json.dumps({"action": "send", "text": "Think it over"}))
        while not asked(model, "parameters"):
            await asyncio.sleep(0.05)
        await socket.send(json.dumps({"action": "stop"}))
        seen = await events_until(socket, is_final)
    assert seen[-1]["payload"]["status"] == "stopped"
    assert model.delivered == len(model.requests) - 1  # the cut-off call was never answered
    calls = len(model.requests)
    app.processes[-1].kill()
    app.processes[-1].wait()
    port = app.web()
    await asyncio.sleep(3)  # DBOS would have resumed a pending round within about a second
    url = f"ws://127.0.0.1:{port}{path}&after={seen[-1]['seq']}"
    async with connect(url, additional_headers=headers) as socket:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(1):
                await socket.recv()  # nothing after the final status
    assert len(model.requests) == calls
