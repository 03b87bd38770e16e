"""Steering a live run over the socket: stop, steer, extend at max steps, approval.

The model is the real openai client against the localhost fake model server.
"""

import json
import time

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive_until
from tests.support.chat_app import workflow_with_upload
from tests.support.fake_openai import FakeReply
from tests.support.replies import cont, extract_step, review, stop, taskplan
from workflows.execution import commands, launcher
from workflows.models import ChatMessage, ChatWorkflow

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

UPLOAD = "docList:round1_upload"


async def start(alice, workflow, upload):
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to(
        {"action": "send", "text": "Summarise the notes", "documents": [upload.pk]}
    )
    return communicator


@database_sync_to_async
def reload(workflow):
    workflow.refresh_from_db()
    return workflow, list(workflow.messages.all()), list(workflow.documents.all())


async def test_stop_cancels_the_model_call_and_keeps_the_work(alice, model):
    """A stop during a slow model call ends the run at once as stopped; done work is kept."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        FakeReply(content=json.dumps(cont()), delay=60),
    )
    communicator = await start(alice, workflow, upload)
    before = await receive_until(communicator, lambda e: e["type"] == "observe")
    await communicator.send_json_to({"action": "stop"})
    events = await receive_until(communicator, is_final)
    # The run ended while the refine call still waited for its 60 s reply: it was cancelled.
    assert model.delivered == len(model.requests) - 1
    assert any(e["type"] == "run" and e["payload"]["status"] == "stopping" for e in events)
    assert events[-1]["payload"]["status"] == "stopped"
    # What was open when the stop came is closed as stopped, before the final status.
    closing = [(e["type"], e["payload"]["status"]) for e in events[-4:-1]]
    assert closing == [("step", "stopped"), ("task", "stopped"), ("round", "stopped")]
    # The stopped round and step keep what they spent, and how long they ran.
    usage = [e for e in before + events if e["type"] == "usage"]
    spent = sum(u["payload"]["promptTokens"] + u["payload"]["completionTokens"] for u in usage)
    step, _, round_end = (e["payload"] for e in events[-4:-1])
    assert round_end["tokens"] == spent > 0 and round_end["durationMs"] > 0
    step_usage = [u["payload"] for u in usage if u["action"] == 1]
    assert step["tokens"] == sum(u["promptTokens"] + u["completionTokens"] for u in step_usage)
    assert step["tokens"] > 0 and step["durationMs"] > 0
    assert await launcher.wait_for(workflow.pk) in (None, ChatWorkflow.Status.STOPPED)
    workflow, messages, documents = await reload(workflow)
    assert workflow.status == ChatWorkflow.Status.STOPPED
    assert workflow.prompt_tokens > 0  # usage so far is kept
    assert [m.role for m in messages] == [ChatMessage.Role.USER, ChatMessage.Role.ACTION]
    assert any(d.label == "round1_task1_action1_extracted" for d in documents)
    await communicator.disconnect()


async def test_steer_reaches_the_next_selection_as_a_learning(alice, model):
    """A note sent while an action runs appears in the next Stage 1 prompt, not the first."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        FakeReply(content=json.dumps(cont()), delay=1.0),  # refine, while the note arrives
        *extract_step(UPLOAD),
        stop(),
        "The notes say revenue grew.",
    )
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "plan")
    await communicator.send_json_to({"action": "steer", "text": "focus on costs"})
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == "completed"
    sent = [e["payload"] for e in events if e["type"] == "notice"]
    assert sent == [{"level": "info", "text": commands.STEER_SENT, "more": None}]  # at once
    bodies = [json.dumps(request) for request in model.requests]
    assert "focus on costs" not in bodies[1]
    assert any("focus on costs" in b for b in bodies[3:]), "the note reached no later prompt"
    model.assert_complete()
    await communicator.disconnect()


async def test_at_max_steps_the_loop_asks_and_extend_resumes_the_task(alice, model):
    """With max 1 step the loop asks; "continue for 1 more" runs a second step in the task."""
    workflow, upload = await workflow_with_upload(alice, max_steps=1)
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        cont(),
        *extract_step(UPLOAD),
        stop(),
        "Done in two steps.",
    )
    communicator = await start(alice, workflow, upload)
    asked = await receive_until(communicator, lambda e: e["type"] == "ask")
    assert "Continue" in asked[-1]["payload"]["question"]
    await communicator.send_json_to({"action": "extend", "steps": 1})
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == "completed"
    plans = [e for e in asked + events if e["type"] == "plan"]
    assert [(e["task"], e["action"]) for e in plans] == [(1, 1), (1, 2)]
    model.assert_complete()
    await communicator.disconnect()


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "extend", "steps": 0},
        # The page's Stop here: the button's answer beside what the steps box holds.
        {"action": "extend", "steps": "3", "answer": "stop"},
        {"action": "extend", "steps": "", "answer": "stop"},
    ],
)
async def test_declining_to_extend_stops_the_task_with_its_reason(alice, model, answer):
    """Answering 0 more steps (or Stop here) ends the task at max steps, stated as such, work
    kept."""
    workflow, upload = await workflow_with_upload(alice, max_steps=1)
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), cont(), review("failed"), "Partial.")
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "ask")
    await communicator.send_json_to(answer)
    events = await receive_until(communicator, is_final)
    codes = [e["payload"].get("code") for e in events if e["type"] == "status"]
    assert "max_steps" in codes
    answered = [e["payload"] for e in events if e["type"] == "ask"]
    assert answered[0]["status"] == "answered" and answered[0]["granted"] == 0
    model.assert_complete()
    await communicator.disconnect()


async def test_a_second_answer_to_a_question_never_answers_the_next_one(alice, model):
    """Two tabs answer the step-limit question ("stop here", then "3 more"): the first
    counts; when the retried task reaches its limit again, that question waits for its own
    answer (the leftover "3 more" answered it at once, and three unasked steps ran)."""
    workflow, upload = await workflow_with_upload(alice, max_steps=1)
    model.add(
        taskplan("Summarise"), *extract_step(UPLOAD), cont(), review("retry", ["Again."]),
        *extract_step(UPLOAD), cont(), review("failed"), "Partial.",
    )  # fmt: skip
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "ask")
    await communicator.send_json_to({"action": "extend", "steps": 0, "answer": "stop"})
    await communicator.send_json_to({"action": "extend", "steps": 3})
    second = await receive_until(
        communicator, lambda e: e["type"] == "ask" and e["payload"]["status"] == "waiting"
    )
    assert [e["payload"]["status"] for e in second if e["type"] == "ask"][-1] == "waiting"
    assert await communicator.receive_nothing(timeout=1.0)  # nobody answered it: it waits
    await communicator.send_json_to({"action": "extend", "steps": 0})
    events = await receive_until(communicator, is_final)
    asked = [e["payload"] for e in events if e["type"] == "ask"]
    assert asked[0]["status"] == "answered" and asked[0]["granted"] == 0
    model.assert_complete()
    await communicator.disconnect()


@pytest.mark.parametrize("approved", [True, False])
async def test_actions_needing_approval_wait_for_the_user(alice, model, settings, approved):
    """An action configured for approval waits; approved it runs, rejected it fails visibly."""
    settings.POWERON_APPROVAL_METHODS = ["document.extract"]
    workflow, upload = await workflow_with_upload(alice)
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(approved), "Answer.")
    communicator = await start(alice, workflow, upload)
    waiting = await receive_until(communicator, lambda e: e["type"] == "approval")
    assert waiting[-1]["payload"]["status"] == "waiting"
    assert not any(e["type"] == "observe" for e in waiting)
    await communicator.send_json_to({"action": "approve", "approved": approved})
    events = await receive_until(communicator, is_final)
    decided = [e for e in events if e["type"] == "approval"][0]["payload"]["status"]
    assert decided == ("approved" if approved else "rejected")
    step = [e for e in events if e["type"] == "message" and e["payload"]["role"] == "action"]
    assert step[0]["payload"]["status"] == ("success" if approved else "rejected")
    if approved:
        observed = [e for e in events if e["type"] == "observe"][0]["payload"]["observation"]
        assert observed["success"] is True
    else:
        errors = [e for e in events if e["type"] == "error"]
        assert errors and errors[0]["payload"]["kind"] == "rejected"
        assert "rejected by the user" in errors[0]["payload"]["message"]
    await communicator.disconnect()


ANSWER = " ".join(f"word{n}" for n in range(60))


@database_sync_to_async
def answer_messages(workflow):
    return list(workflow.messages.filter(role=ChatMessage.Role.ASSISTANT))


async def test_stop_during_the_answer_keeps_the_partial_answer(alice, model):
    """Stopping while the answer streams stores the text so far as a stopped answer."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        stop(),
        FakeReply(content=ANSWER, chunk_delay=0.2),
    )
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "delta")
    await communicator.send_json_to({"action": "stop"})
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == "stopped"
    (answer,) = await answer_messages(workflow)
    assert answer.status == "stopped"
    assert answer.content.startswith("word0")
    assert 0 < len(answer.content) < len(ANSWER)
    await communicator.disconnect()


@database_sync_to_async
def mark_stopping(workflow):
    ChatWorkflow.objects.filter(pk=workflow.pk).update(status=ChatWorkflow.Status.STOPPING)


async def test_a_lost_stop_message_still_stops_the_run(alice, model):
    """The layer may drop the stop command; the run also sees "stopping" in the database."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(taskplan("Summarise"), FakeReply(content="{}", delay=60))
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "taskplan" or e["type"] == "task")
    await mark_stopping(workflow)  # as request_stop does, but no control message is sent
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"] == {"status": "stopped", "reason": "Stopped by the user."}
    await communicator.disconnect()


async def test_a_run_cancelled_by_the_server_says_so(alice, model, durable):
    """A cancellation nobody asked for (the server shutting down) is not blamed on the user."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(taskplan("Summarise"), FakeReply(content="{}", delay=60))
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "task")
    runner = next(r for r in durable.RUNNERS.values() if r.workflow_id == workflow.pk)
    runner.task.cancel()
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == "stopped"
    assert events[-1]["payload"]["reason"] == "Interrupted: the server stopped."
    await communicator.disconnect()


async def test_an_unanswered_question_ends_with_the_time_budget(alice, model, settings):
    """Nobody answers "continue?": the wait ends when the round's time budget is spent (2 s
    here), not after the host's 15-minute limit; the task stops at its step limit."""
    settings.POWERON_TIME_BUDGET = 2
    workflow, upload = await workflow_with_upload(alice, max_steps=1)
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), cont(), review("failed"), "Partial.")
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "ask")
    asked = time.monotonic()
    events = await receive_until(communicator, is_final, timeout=20)
    assert time.monotonic() - asked < 10
    answered = [e["payload"] for e in events if e["type"] == "ask"]
    assert answered and answered[0]["granted"] == 0
    assert answered[0]["status"] == "cancelled"  # nobody answered: not the user's "stop"
    await communicator.disconnect()


async def test_an_unanswered_approval_ends_with_the_time_budget(alice, model, settings):
    """An action waiting for approval that never comes is not run once the round's time
    budget (2 s here) is spent, not after 15 minutes; it says nobody answered."""
    settings.POWERON_APPROVAL_METHODS = ["document.extract"]
    settings.POWERON_TIME_BUDGET = 2
    workflow, upload = await workflow_with_upload(alice)
    model.add(taskplan("Summarise"), *extract_step(UPLOAD), stop(False), "Answer.")
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "approval")
    asked = time.monotonic()
    events = await receive_until(communicator, is_final, timeout=20)
    assert time.monotonic() - asked < 10
    decided = [e["payload"]["status"] for e in events if e["type"] == "approval"]
    assert decided == ["cancelled"]  # nobody answered: not "rejected by the user"
    await communicator.disconnect()


async def test_a_steering_note_after_the_last_choice_is_said_unused(alice, model):
    """A note that arrives while the answer is written is not silently dropped: the round
    says it came after the agent's last choice of action and was not used."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step(UPLOAD),
        stop(),
        FakeReply(content="The notes say revenue grew.", delay=1.0),  # the answer, slowly
    )
    communicator = await start(alice, workflow, upload)
    await receive_until(communicator, lambda e: e["type"] == "refine")
    await communicator.send_json_to({"action": "steer", "text": "focus on costs"})
    events = await receive_until(communicator, is_final)
    assert events[-1]["payload"]["status"] == "completed"
    said = [e["payload"]["reason"] for e in events if e["type"] == "status"]
    assert any("was not used" in r and "“focus on costs”" in r for r in said), said
    await communicator.disconnect()
