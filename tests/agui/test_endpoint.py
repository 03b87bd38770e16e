"""The AG-UI endpoint on a real Daphne with the fake model server: a run's events in order,
an approval and the step-limit question as interrupts resumed by the next RunAgentInput, a
thread that is a workflow, reconnecting to a run, and who may do what. Every round it runs
is a round like any other: stored, in the page and in admin."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.agui.live import LiveApp, as_alice, start_app
from tests.agui.protocol import state_of, text_of, types, verify
from tests.support.apps import app_env
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import cont, extract_step, review, stop, taskplan

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).with_name("httpagent.mjs")
UPLOAD = "docList:round1_upload"
ANSWER = "The notes say revenue grew 12 percent and costs fell 3 percent; " + " ".join(
    f"word{n}" for n in range(40)
)
CHAT_PLAN = {"overview": "chat", "tasks": []}

# The module's Daphne starts within its first test, and a test runs several rounds.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def model():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def live(model, tmp_path_factory):
    """One Daphne for the module: every document.extract waits for approval, no per-token
    request limit."""
    tmp_path = tmp_path_factory.mktemp("agui")
    env = app_env(
        tmp_path, model.url,
        POWERON_APPROVAL_METHODS="document.extract",
        POWERON_API_REQUESTS_PER_MINUTE="0",
        POWERON_MAX_ROUNDS_PER_HOUR="0",
    )  # fmt: skip
    processes, app = start_app(env, tmp_path)
    try:
        yield app
    finally:
        processes.stop()


@pytest.fixture(autouse=True)
def script_used(model):
    """Each test uses its model replies, all of them."""
    yield
    model.assert_complete()


def ask(thread: str | int, run: str, text: str = "Summarise the notes", **poweron) -> dict:
    body = {"threadId": str(thread), "runId": run,
            "messages": [{"id": f"m-{run}", "role": "user", "content": text}]}  # fmt: skip
    if poweron:
        body["forwardedProps"] = {"poweron": poweron}
    return body


def resume(thread: str | int, run: str, interrupt: dict, payload) -> dict:
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}
    return {"threadId": str(thread), "runId": run, "messages": [], "resume": [entry]}


def interrupt_of(events: list[dict]) -> dict:
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    return interrupt


def test_a_run_is_interrupted_by_an_approval_and_resumed(live: LiveApp, model):
    """The first run: RUN_STARTED, the state, the step's phases, the action as a tool call
    (Stage 2's parameters), then RUN_FINISHED with the approval as an interrupt naming that
    tool call. The resumed run approves it: the tool call's result, the answer streamed as a
    text message in several pieces, RUN_FINISHED. The text is the stored answer, the state
    adds up to the stored events, the round is in the page and in admin,
    and so are the AG-UI runs."""
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(),
              FakeReply(content=ANSWER, chunk_delay=0.02))  # fmt: skip
    workflow, document = live.workflow(live.alice)
    token = live.alice.tokens["run"]
    response, first = live.post(token, ask(workflow, "run-1", documents=[document]))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    verify(first)
    assert types(first)[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    assert (first[0]["threadId"], first[0]["runId"]) == (str(workflow), "run-1")
    assert first[0]["metadata"]["poweron"]["workflow"] == workflow
    phases = [e["stepName"] for e in first if e["type"] == "STEP_STARTED"]
    assert phases == ["plan", "act"]
    call = [e for e in first if e["type"].startswith("TOOL_CALL")]
    assert types(call) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert call[0]["toolCallName"] == "document.extract"
    interrupt = interrupt_of(first)
    assert interrupt["reason"] == "approval"
    assert interrupt["toolCallId"] == call[0]["toolCallId"]
    assert "notes.md" in interrupt["message"]
    assert state_of(first)["status"] == "waiting"

    response, second = live.post(token, resume(workflow, "run-2", interrupt, {"approved": True}))
    assert response.status_code == 200
    verify(second)
    assert second[0]["runId"] == "run-2"
    assert [e["stepName"] for e in second if e["type"] == "STEP_STARTED"] == [
        "act", "observe", "refine",
    ]  # fmt: skip
    (result,) = [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == call[0]["toolCallId"] and '"success":true' in result["content"]
    pieces = [e for e in second if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(pieces) > 2
    assert second[-1]["type"] == "RUN_FINISHED" and "outcome" not in second[-1]
    assert second[-1]["result"]["status"] == "completed"

    events, messages = live.stored(live.alice, workflow)
    assert text_of(second) == messages[-1]["content"]
    state = state_of(second)
    usage = [e["payload"] for e in events if e["type"] == "usage"]
    assert state["usage"]["promptTokens"] == sum(u["promptTokens"] for u in usage)
    assert [t["status"] for t in state["tasks"]] == ["success"]
    assert [s["status"] for s in state["steps"]] == ["success"]
    assert [e["payload"]["status"] for e in events if e["type"] == "approval"] == [
        "waiting", "approved",
    ]  # fmt: skip
    page, admin, runs = as_alice(
        live, f"/workflows/{workflow}/", f"/admin/workflows/chatworkflow/{workflow}/change/",
        f"/admin/agui/aguirun/?q={workflow}",
    )  # fmt: skip
    assert ANSWER[:40] in page and "Summarise the notes" in admin
    assert "run-1" in runs and "run-2" in runs  # the AG-UI runs, in admin too


def test_the_step_limit_question_and_approvals_interrupt_in_turn(live: LiveApp, model):
    """With one step allowed: approve the first action, grant one more step at the limit,
    approve the second: four runs, each ending with its interrupt but the last."""
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), cont(), *extract_step(UPLOAD),
              stop(), "Done in two steps.")  # fmt: skip
    workflow, document = live.workflow(live.alice, max_steps=1)
    token = live.alice.tokens["run"]
    _, events = live.post(token, ask(workflow, "a", documents=[document]))
    answers = {"approval": {"approved": True}, "step_limit": {"steps": 1}}
    reasons = []
    for run in ("b", "c", "d"):
        verify(events)
        interrupt = interrupt_of(events)
        reasons.append(interrupt["reason"])
        _, events = live.post(token, resume(workflow, run, interrupt, answers[interrupt["reason"]]))
    verify(events)
    assert reasons == ["approval", "step_limit", "approval"]
    assert text_of(events) == "Done in two steps." and events[-1]["type"] == "RUN_FINISHED"
    assert [s["status"] for s in state_of(events)["steps"]] == ["success", "success"]


def test_a_new_thread_is_a_new_workflow_that_its_next_runs_go_on(live: LiveApp, model):
    """A thread PowerOn has not seen: a new workflow; the next run of the thread is the
    workflow's next round, whose message is the user's last alone (the workflow has the
    history the client sends again)."""
    model.add(CHAT_PLAN, "Hello!", CHAT_PLAN, "Again!")
    thread = str(uuid.uuid4())
    token = live.alice.tokens["run"]
    _, first = live.post(token, ask(thread, "one", "Say hello"))
    verify(first)
    where = first[0]["metadata"]["poweron"]
    assert text_of(first).startswith("Hello!") and first[0]["threadId"] == thread
    body = ask(thread, "two", "Say it again")
    body["messages"] = [
        {"id": "1", "role": "user", "content": "Say hello"},
        {"id": "2", "role": "assistant", "content": "Hello!"},
        *body["messages"],
    ]
    _, second = live.post(token, body)
    verify(second)
    again = second[0]["metadata"]["poweron"]
    assert (again["workflow"], where["round"], again["round"]) == (where["workflow"], 1, 2)
    assert text_of(second).startswith("Again!")
    _, messages = live.stored(live.alice, where["workflow"])
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert said == ["Say hello", "Say it again"]


def test_reconnecting_to_a_run_replays_it_by_seq(live: LiveApp, model):
    """A client that lost the stream partway asks for the same run again: from the start it
    gets the same events (the answer's pieces as stored), and after its Last-Event-ID it
    gets the state, the answer so far and the rest, with nothing twice."""
    model.add(CHAT_PLAN, FakeReply(content=ANSWER, chunk_delay=0.05))
    thread = str(uuid.uuid4())
    token = live.alice.tokens["run"]
    seen = []
    with live.stream(token, ask(thread, "lost", "Tell me")) as (_, events):
        for event in events:
            seen.append(event)
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                break  # the connection goes; the round does not
    last = [e["_id"] for e in seen if e["_id"]][-1]
    reader = live.alice.tokens["read"]
    _, whole = live.post(reader, ask(thread, "lost", "Tell me"))
    verify(whole)
    _, messages = live.stored(live.alice, whole[0]["metadata"]["poweron"]["workflow"])
    answer = messages[-1]["content"]
    assert answer.startswith(ANSWER) and text_of(whole) == answer
    assert whole[0]["metadata"]["poweron"]["kind"] == "replay"
    seen_ids = [e["_id"] for e in seen if e["_id"]]
    assert [e["_id"] for e in whole if e["_id"]][: len(seen_ids)] == seen_ids

    _, rest = live.post(reader, ask(thread, "lost", "Tell me"), **{"Last-Event-ID": last})
    verify(rest)
    assert types(rest)[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"]
    ids = [int(e["_id"]) for e in rest if e["_id"]]
    assert ids == sorted(set(ids)) and ids[0] == int(last)  # the opening says where it is
    assert text_of(rest) == answer
    assert state_of(rest) == state_of(whole)


def test_who_may_start_resume_and_replay(live: LiveApp, model):
    """No token: 401 with a challenge; a read token cannot start a run (403) but replays
    one. bob gets 404 for alice's workflow as a thread, 422 for her interrupt on a thread
    of his, and the ids of her runs are a new thread of his (her workflow is untouched).
    alice rejects the action by resuming."""
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(False), review("failed"),
              "Not read.",
              CHAT_PLAN, "Alice's answer.", CHAT_PLAN, "Bob's answer.")  # fmt: skip
    workflow, document = live.workflow(live.alice)
    alice, bob = live.alice.tokens, live.bob.tokens
    response, _ = live.post("", ask(workflow, "x"))
    assert response.status_code == 401 and response.headers["WWW-Authenticate"]
    assert response.headers["content-type"] == "application/problem+json"
    response, _ = live.post(alice["read"], ask(workflow, "x"))
    assert (response.status_code, response.json()["type"]) == (
        403, "/api/v1/problems/insufficient-scope",
    )  # fmt: skip
    _, first = live.post(alice["run"], ask(workflow, "mine", documents=[document]))
    interrupt = interrupt_of(first)
    response, replayed = live.post(alice["read"], ask(workflow, "mine"))
    assert response.status_code == 200 and interrupt_of(replayed) == interrupt

    response, _ = live.post(bob["all"], ask(workflow, "mine"))
    assert (response.status_code, response.json()["type"]) == (404, "/api/v1/problems/not-found")
    response, _ = live.post(bob["all"], resume(workflow, "his", interrupt, True))
    assert response.status_code == 404  # the thread is alice's workflow
    response, _ = live.post(bob["all"], resume(str(uuid.uuid4()), "his", interrupt, True))
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "resume.0.interruptId"

    _, rejected = live.post(alice["run"], resume(workflow, "no", interrupt, {"approved": False}))
    verify(rejected)
    events, _ = live.stored(live.alice, workflow)
    assert [e["payload"]["status"] for e in events if e["type"] == "approval"] == [
        "waiting", "rejected",
    ]  # fmt: skip
    (result,) = [e for e in rejected if e["type"] == "TOOL_CALL_RESULT"]
    assert '"status":"rejected"' in result["content"]

    thread = str(uuid.uuid4())
    _, hers = live.post(alice["run"], ask(thread, "chat", "Hi"))
    response, _ = live.post(bob["read"], ask(thread, "chat", "Hi"))
    assert response.status_code == 403  # not a replay for bob: a run of his would start
    _, his = live.post(bob["run"], ask(thread, "chat", "Hi"))
    verify(his)
    assert his[0]["metadata"]["poweron"]["kind"] == "start"
    assert his[0]["metadata"]["poweron"]["workflow"] != hers[0]["metadata"]["poweron"]["workflow"]
    assert text_of(hers).startswith("Alice's answer.") and text_of(his).startswith("Bob's")


def test_the_official_httpagent_runs_a_task_with_an_approval(live: LiveApp, model):
    """@ag-ui/client's HttpAgent (npm, unchanged) runs a task: its first run ends with the
    approval interrupt, the resumed one with the answer; the client verified the order of
    every event itself, and ends with the answer, the action's tool call and its result
    among its messages and the round's state."""
    assert shutil.which("node"), "Node.js runs the official AG-UI client"
    assert (ROOT / "node_modules/@ag-ui/client").is_dir(), "run `make setup-node` first"
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(), "Revenue grew 12 percent.")
    workflow, document = live.workflow(live.alice)
    command = ["node", str(CLIENT), f"{live.base}/api/v1/agui", live.alice.tokens["run"],
               str(workflow), str(document)]  # fmt: skip
    ran = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    first, second = seen["runs"]
    assert first[:2] == ["RUN_STARTED", "STATE_SNAPSHOT"] and first[-1] == "RUN_FINISHED"
    assert first.index("TOOL_CALL_START") < first.index("TOOL_CALL_END")
    assert [i["reason"] for i in seen["interrupts"]] == ["approval"] and not seen["pending"]
    assert second[0] == "RUN_STARTED" and second[-1] == "RUN_FINISHED"
    assert second.index("TOOL_CALL_RESULT") < second.index("TEXT_MESSAGE_START")
    assert second.index("TEXT_MESSAGE_START") < second.index("TEXT_MESSAGE_END")
    assert seen["result"]["status"] == "completed"
    messages = seen["messages"]
    (call,) = [c for m in messages for c in m.get("toolCalls", [])]
    assert call["function"]["name"] == "document.extract"
    (result,) = [m for m in messages if m["role"] == "tool"]
    assert result["toolCallId"] == call["id"]
    answer = messages[-1]
    assert answer["role"] == "assistant" and answer["content"].startswith("Revenue grew")
    assert seen["state"]["status"] == "completed"
    assert [t["status"] for t in seen["state"]["tasks"]] == ["success"]
