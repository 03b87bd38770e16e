"""A model slower than its timeout, through the real openai client against the localhost fake
model server: what people are told (the time waited, and to see the administrator when it
keeps happening), what staff are told (the host's advice, naming its settings, as the error's
detail) and what the model is told (not the advice). Each slow reply waits four times the
client's timeout, so a busy machine cannot make a slow call look fast, nor a fast one slow."""

from __future__ import annotations

import pytest

from tests.engine.conftest import collect, make_state, of, params, review, select, taskplan
from tests.support.fake_openai import FakeReply
from tests.support.texts import people_texts
from workflows.engine.model.llm import OpenAICompatibleLLM

TIMEOUT = 1.0
SLOW = 4 * TIMEOUT
ADVICE = {"timeout": "Raise the model's timeout, or check the server's load."}


@pytest.fixture
async def slow_llm(fake_openai):
    """The real client with a one-second timeout, no retries, and the host's advice."""
    async with OpenAICompatibleLLM(
        base_url=fake_openai.url,
        api_key="sk-test",
        model="fake-model",
        timeout=TIMEOUT,
        max_retries=0,
        advice=ADVICE,
    ) as client:
        yield client


async def test_a_call_that_never_answers_says_how_long_it_waited_and_what_to_raise(
    fake_openai, slow_llm
) -> None:
    """Stage 1 times out twice: each error says the time waited (the host's advice is its
    detail, for staff), not that the answer may have been looping (none of it came); the
    corrective retry does not carry the advice to the model; the failed step, the round and
    the answer give the same reason, without the settings."""
    slow = FakeReply(content=select(), delay=SLOW)
    fake_openai.add(taskplan("Find facts"), slow, slow, review("failed"))
    events = await collect(make_state(), slow_llm)
    fake_openai.assert_complete()
    told = (
        "no answer within 1 s; if it keeps happening, ask the administrator to give the model "
        "more time"
    )
    errors = [e.message for e in of(events, "error")]
    assert errors == [f"The model produced no valid answer for the action selection: {told}"] * 2
    assert [e.detail for e in of(events, "error")] == [ADVICE["timeout"]] * 2
    assert "looping" not in " ".join(errors)
    retry = fake_openai.requests[2]["messages"][-1]["content"]
    assert "no answer within 1 s" in retry and "Raise" not in retry
    reason = (
        "Step 1 failed: the model gave no valid action selection after one corrective retry — "
        f"{told}."
    )
    assert [s.reason for s in of(events, "step") if s.status == "failed"] == [reason]
    assert events[-1].reason == f"The task did not succeed: Task 1: {reason}"
    assert f"- Task 1 (Find facts): {reason}" in of(events, "message")[-1].content
    assert "Raise" not in " ".join(text for e in events for text in people_texts(e))


async def test_an_answer_that_stops_partway_may_have_been_looping(fake_openai, slow_llm) -> None:
    """Refine writes the round's answer as it streams and stops partway: only then is the
    model said to have maybe looped, with how much it wrote."""
    stalled = FakeReply(
        content={"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": "Hi."},
        stall=SLOW,
    )
    fake_openai.add(taskplan("Find facts"), select(), params(query="q"), stalled)
    fake_openai.add({"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": "Hi."})
    events = await collect(make_state(), slow_llm)
    fake_openai.assert_complete()
    (error,) = of(events, "error")
    assert error.message.startswith(
        "The model produced no valid answer for the refinement decision: no answer within 1 s: "
        "it stopped partway through ("
    )
    assert error.message.endswith(
        "characters written) and may have been looping; if it keeps happening, ask the "
        "administrator to give the model more time"
    )
    assert error.detail == ADVICE["timeout"]
    assert events[-1].status == "completed"


async def test_an_answer_that_never_starts_is_the_model_unavailable_with_the_advice(
    fake_openai, slow_llm
) -> None:
    """The final answer's stream does not begin in time: the model is unavailable, said once
    with the time waited (the server and the advice are the error's detail, for staff), and
    the round's status and answer give that reason (the client's own timeout error escaped
    and the run failed "internally")."""
    fake_openai.add(
        taskplan("Find facts", "Find more"),  # two tasks: the answer has a call of its own
        select(), params(query="q"), {"decision": "stop", "reason": "Done.", "criteriaMet": True},
        select(), params(query="r"), {"decision": "stop", "reason": "Done.", "criteriaMet": True},
        FakeReply(content="Both found.", delay=SLOW),
    )  # fmt: skip
    events = await collect(make_state(), slow_llm)
    fake_openai.assert_complete()
    (error,) = of(events, "error")
    assert error.kind == "model" and error.message.startswith("The model did not answer within ")
    assert error.message.endswith(
        " s. Try again; if it keeps happening, ask the administrator to give the model more time."
    )
    said = f"The model server at 127.0.0.1:{fake_openai.port} did not answer within "
    assert error.detail.startswith(said)
    assert error.detail.endswith(" s. Raise the model's timeout, or check the server's load.")
    assert events[-1].status == "failed" and events[-1].reason == error.message
    assert of(events, "message")[-1].content == f"I could not finish this request. {error.message}"
