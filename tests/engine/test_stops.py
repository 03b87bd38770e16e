"""Every way a task's loop stops, each with its own stated reason; approvals; cancellation."""

from __future__ import annotations

import asyncio

import pytest

from tests.engine.conftest import (
    collect,
    cont,
    make_state,
    of,
    one_search_round,
    params,
    review,
    select,
    stop,
    taskplan,
)
from tests.support.fake_tools import FakeToolExecutor
from workflows.engine.loop.controls import AutoControls
from workflows.engine.loop.round import run_round
from workflows.engine.records.protocols import ModelUnavailable
from workflows.engine.records.state import Budgets, Policy
from workflows.engine.testing import MemoryStore, ScriptedLLM


def codes(events) -> list[str]:
    return [e.code for e in of(events, "status") if e.code != "info"]


async def test_stop_when_the_criteria_are_met() -> None:
    events = await collect(make_state(), one_search_round())
    assert codes(events) == ["criteria_met"]


async def test_stop_when_nothing_more_can_improve_the_result() -> None:
    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="q"), stop(False, "No better source exists."),
         review("failed"), "no"]
    )  # fmt: skip
    events = await collect(make_state(), llm)
    assert codes(events) == ["no_improvement"]
    assert of(events, "status")[0].reason == "No better source exists."


async def test_max_steps_asks_first_and_stops_when_refused() -> None:
    """The ask event comes before the controls are awaited; 0 more steps stops the task."""
    llm = ScriptedLLM(
        [taskplan("t"), select(), params(query="a"), cont(), review("failed"), "partial"]
    )
    controls = AutoControls()
    events = await collect(make_state(max_steps=1), llm, controls=controls)
    llm.assert_complete()
    assert controls.asked == [(1, 1)]
    ask = of(events, "ask")[0]
    assert ask.stepsDone == 1 and ask.task == 1
    assert codes(events) == ["max_steps"]
    assert events.index(ask) < events.index(of(events, "status")[0])


async def test_granted_steps_continue_the_same_task() -> None:
    """Answering the ask with more steps continues the same task with its next action."""
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), cont(),
            select(), params(query="b"), stop(), "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(max_steps=1), llm, controls=AutoControls(extra_steps=[1]))
    llm.assert_complete()
    assert [(p.task, p.action) for p in of(events, "plan")] == [(1, 1), (1, 2)]
    assert codes(events) == ["criteria_met"]


async def test_stop_when_the_token_budget_is_spent() -> None:
    """Once the round's tokens are used up no more model calls are made; the reason says a
    new message starts afresh."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q")])  # no refine after it
    state = make_state(budgets=Budgets(tokens=1500))
    events = await collect(state, llm)
    llm.assert_complete()
    assert codes(events) == ["token_budget"]
    assert "a new message starts with a fresh budget" in of(events, "status")[0].reason
    answer = of(events, "message")[-1]
    assert answer.role == "assistant" and "token budget" in answer.content
    # What was done, as a list people read: the task, its step under it.
    assert "\n\n- Task 1 (failed): " in answer.content
    assert "\n  - Step 1, web.search (succeeded): " in answer.content
    assert of(events, "task")[-1].status == "failed"


async def test_stop_when_the_time_budget_is_spent() -> None:
    """A clock past the time budget stops the loop with its own reason."""
    now = [0.0]

    def clock() -> float:
        now[0] += 4.0
        return now[0]

    llm = ScriptedLLM([taskplan("t"), select(), params(query="q"), cont()])
    state = make_state(budgets=Budgets(seconds=20))
    events = await collect(state, llm, clock=clock)
    assert "time_budget" in codes(events)
    assert "time budget" in of(events, "status")[-1].reason


async def test_an_unreachable_model_fails_the_round_visibly() -> None:
    """One error says what failed; what was open is closed; the answer says so briefly."""
    llm = ScriptedLLM([taskplan("t"), ModelUnavailable("The model server at x refused.")])
    events = await collect(make_state(), llm)
    errors = of(events, "error")
    assert [(e.kind, e.message) for e in errors] == [("model", "The model server at x refused.")]
    assert codes(events) == []  # said once, by the error
    assert [(s.status, s.step) for s in of(events, "step")] == [("started", 1), ("failed", 1)]
    assert of(events, "task")[-1].status == "failed"
    answer = of(events, "message")[-1]
    assert answer.role == "assistant" and answer.status == "failed"
    assert answer.content == "I could not finish this request. The model server at x refused."
    assert events[-1].type == "round" and events[-1].status == "failed"
    assert events[-1].reason == "The model server at x refused."  # as the answer says it


def assert_partial_answer_failed(events: list, partial: str) -> None:
    """The answer streamed before the model was lost is the round's one answer, failed, and
    says why it stops there, as the round's status does."""
    answers = [m for m in of(events, "message") if m.role == "assistant"]
    why = events[-1].reason
    assert why == "The model server at x broke off its answer."
    said = f"{partial}\n\nI could not finish this answer. {why}"
    assert [(a.content, a.status) for a in answers] == [(said, "failed")]
    assert events[-1].status == "failed"


async def test_a_model_lost_mid_answer_keeps_the_partial_answer() -> None:
    """The answer streamed so far becomes the failed answer; no second answer follows."""

    class BreaksOff(ScriptedLLM):
        async def stream_text(self, messages, *, kind, key=""):
            yield "The first half"
            raise ModelUnavailable("The model server at x broke off its answer.")

    llm = BreaksOff([taskplan("t"), select(), params(query="q"), stop()])
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert_partial_answer_failed(events, "The first half")


async def test_review_retry_runs_the_task_again_with_the_improvements() -> None:
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), stop(False), review("retry", ["Use official sources"]),
            select(), params(query="b"), stop(),
            "ok",
        ]
    )  # fmt: skip
    events = await collect(make_state(), llm)
    llm.assert_complete()
    statuses = [t.status for t in of(events, "task")]
    assert statuses == ["pending", "running", "retry", "running", "success"]
    assert [r.retries for r in of(events, "review")] == [0, 1]
    assert of(events, "plan")[1].action == 2  # numbering goes on: labels never clash
    assert "Improve: Use official sources" in llm.calls[5].messages[-1]["content"]


async def test_retries_are_limited_by_a_small_counter() -> None:
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(), params(query="a"), stop(False), review("retry"),
            select(), params(query="b"), stop(False), review("retry"),
            "no",
        ]
    )  # fmt: skip
    events = await collect(make_state(max_task_retries=1), llm)
    llm.assert_complete()
    final = of(events, "task")[-1]
    assert final.status == "failed" and final.reason.startswith("Retries used up")


async def test_approval_is_asked_before_the_action_runs() -> None:
    tools = FakeToolExecutor()
    controls = AutoControls(approve=True)
    events = await collect(
        make_state(policy=Policy(approval=["web.*"])),
        one_search_round(),
        tools=tools,
        controls=controls,
    )
    approvals = of(events, "approval")
    assert [a.status for a in approvals] == ["waiting", "approved"]
    assert controls.approvals == [("web.search", approvals[0].parameters)]
    assert len(tools.calls) == 1


async def test_a_rejected_action_is_a_visible_failed_step() -> None:
    llm = ScriptedLLM(
        [
            taskplan("t"),
            select(),
            params(query="q"),
            stop(False, "Rejected."),
            review("failed"),
            "no",
        ]
    )
    tools = FakeToolExecutor()
    events = await collect(
        make_state(policy=Policy(approval=["web.search"])), llm, tools=tools,
        controls=AutoControls(approve=False),
    )  # fmt: skip
    assert tools.calls == []
    assert of(events, "error")[0].kind == "rejected"
    message = [m for m in of(events, "message") if m.role == "action"][0]
    assert message.status == "rejected" and message.success is False


async def test_cancellation_propagates_out_of_a_tool() -> None:
    """A stop while an action runs cancels the round; nothing swallows CancelledError."""
    started = asyncio.Event()

    async def slow(params, ctx):
        started.set()
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    async def consume() -> None:
        async for _ in run_round(
            make_state(), llm=one_search_round(), tools=FakeToolExecutor({"web.search": slow}),
            store=MemoryStore(), controls=AutoControls(),
        ):  # fmt: skip
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancellation_propagates_out_of_a_model_call() -> None:
    llm = ScriptedLLM([asyncio.CancelledError()])
    with pytest.raises(asyncio.CancelledError):
        await collect(make_state(), llm)


async def test_cancellation_propagates_while_waiting_for_the_user() -> None:
    class Waiting(AutoControls):
        async def ask_continue(self, *, task: int, steps_done: int, timeout=None) -> int:
            await asyncio.sleep(60)
            return 0

    llm = ScriptedLLM([taskplan("t"), select(), params(query="a"), cont()])
    seen: list[str] = []

    async def consume() -> None:
        async for event in run_round(
            make_state(max_steps=1), llm=llm, tools=FakeToolExecutor(), store=MemoryStore(),
            controls=Waiting(),
        ):  # fmt: skip
            seen.append(event.type)

    task = asyncio.create_task(consume())
    while "ask" not in seen:
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_waiting_for_the_user_counts_against_the_budget_not_the_step() -> None:
    """The approval wait is bounded by what is left of the time budget, is spent from it,
    and is left out of the step's duration."""
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # every reading is a second later
        return now[0]

    class SlowApprover(AutoControls):
        async def approve(self, *, action, parameters, task, step, timeout):
            self.timeouts = [*getattr(self, "timeouts", []), timeout]
            now[0] += 100.0  # the user took 100 s
            return True

    controls = SlowApprover()
    llm = ScriptedLLM([taskplan("t"), select(), params(query="a"), stop(), "ok"])
    state = make_state(policy=Policy(approval=["web.*"]), budgets=Budgets(seconds=1000))
    events = await collect(state, llm, controls=controls, clock=clock)
    assert controls.timeouts[0] is not None and 900 < controls.timeouts[0] < 1000
    step = of(events, "step")[-1]
    assert step.status == "success" and step.durationMs < 50_000  # not the 100 s wait
    assert of(events, "round")[-1].durationMs > 100_000  # but the round's time includes it


async def test_a_question_or_an_approval_nobody_answers_is_said_as_such() -> None:
    """No answer in time (the controls return None) is not the user's "no": the approval is
    cancelled and its step stopped, not "rejected by the user"; the question is cancelled
    and the task's reason says nobody answered."""

    class Silent(AutoControls):
        async def approve(self, *, action, parameters, task, step, timeout):
            return None

        async def ask_continue(self, *, task, steps_done, timeout=None):
            return None

    llm = ScriptedLLM([taskplan("t"), select(), params(query="a"), cont(), review("failed"), "x"])
    state = make_state(max_steps=1, policy=Policy(approval=["web.*"]))
    events = await collect(state, llm, controls=Silent())
    approval = of(events, "approval")[-1]
    assert approval.status == "cancelled"
    step = of(events, "step")[-1]
    assert step.status == "stopped"
    assert [e.message for e in of(events, "error")] == [
        "web.search was not run: nobody approved it in time."
    ]
    ask = of(events, "ask")[-1]
    assert ask.status == "cancelled" and ask.granted == 0
    reasons = [e.reason for e in of(events, "status") if e.code == "max_steps"]
    assert reasons and "not answered in time" in reasons[0]


async def test_a_wait_that_spends_the_time_budget_ends_the_loop_without_more_calls() -> None:
    """Nobody approves before the round's time is up: the step ends there, and neither
    refine nor a review is asked (the script has no reply for them)."""
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    class Late(AutoControls):
        async def approve(self, *, action, parameters, task, step, timeout):
            now[0] += 100.0
            return None

    llm = ScriptedLLM([taskplan("t"), select(), params(query="a")])
    state = make_state(policy=Policy(approval=["web.*"]), budgets=Budgets(seconds=50))
    events = await collect(state, llm, controls=Late(), clock=clock)
    llm.assert_complete()
    assert codes(events) == ["time_budget"]
    assert of(events, "task")[-1].status == "failed"


async def test_the_answer_says_how_each_step_ended_as_its_badge_does() -> None:
    """A step nobody approved before the round's time ran out closes as stopped; the answer
    that lists what was done says "stopped" beside it too (it said "failed"), and
    "succeeded" beside the step before it."""
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    class Late(AutoControls):
        async def approve(self, *, action, parameters, task, step, timeout):
            now[0] += 100.0
            return None

    replies = [taskplan("t"), select(), params(query="a"), cont("More.", next=select("web.scrape"))]
    llm = ScriptedLLM([*replies, params(query="b")])
    state = make_state(policy=Policy(approval=["web.scrape"]), budgets=Budgets(seconds=50))
    events = await collect(state, llm, controls=Late(), clock=clock)
    llm.assert_complete()
    assert [s.status for s in of(events, "step") if s.status != "started"] == [
        "success",
        "stopped",
    ]
    answer = of(events, "message")[-1].content
    assert "  - Step 1, web.search (succeeded): " in answer
    assert "  - Step 2, web.scrape (stopped): " in answer and "(failed)" not in answer


async def test_the_daily_budget_counts_earlier_rounds_of_the_day() -> None:
    """With the workflow's day nearly spent by earlier rounds, this round stops early and
    says when the budget frees up."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q")])
    state = make_state(budgets=Budgets(tokens=None, day_tokens=5000, day_tokens_used=4000))
    events = await collect(state, llm)
    llm.assert_complete()
    reason = of(events, "status")[0].reason
    assert "daily token budget is spent" in reason and "24 hours" in reason


class AnswersInRefine(ScriptedLLM):
    """Refine streams part of its answer, then `then()` decides: break off, or hang."""

    def __init__(self, replies, then) -> None:
        super().__init__(replies)
        self.then = then

    async def complete(self, messages, *, output, kind, key="", on_answer=None):
        if kind == "refine" and on_answer is not None:
            await on_answer("The first half")
            await self.then()
        return await super().complete(messages, output=output, kind=kind, key=key)


async def test_a_model_lost_while_refine_streams_its_answer_keeps_the_partial_answer() -> None:
    async def break_off() -> None:
        raise ModelUnavailable("The model server at x broke off its answer.")

    llm = AnswersInRefine([taskplan("t"), select(), params(query="q")], break_off)
    events = await collect(make_state(), llm)
    llm.assert_complete()
    assert_partial_answer_failed(events, "The first half")


async def test_stopping_a_round_while_refine_streams_its_answer_cancels_the_call() -> None:
    """The round's task is cancelled (Stop) mid-answer: the model call is cancelled with it,
    not left running."""
    import asyncio

    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hang() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    llm = AnswersInRefine([taskplan("t"), select(), params(query="q")], hang)
    round_task = asyncio.create_task(collect(make_state(), llm))
    await asyncio.wait_for(started.wait(), 5)
    round_task.cancel()
    await asyncio.wait_for(cancelled.wait(), 5)
    with pytest.raises(asyncio.CancelledError):
        await round_task


class DownServerTools(FakeToolExecutor):
    """The fake catalog, with an MCP server that failed to list its tools."""

    def unavailable(self) -> dict[str, str]:
        return {"my_wiki.*": "MCP server my_wiki (203.0.113.9) failed: connection refused"}


@pytest.mark.parametrize("schemas", ["narrow", "stable"])
async def test_choosing_a_tool_of_a_server_that_failed_says_why(schemas) -> None:
    """A model that names a tool of a server that is down hears, and the page shows, that
    the server failed and why."""
    llm = ScriptedLLM(
        [taskplan("t"), select("my_wiki.city_facts"), select("my_wiki.city_facts"),
         review("failed")]
    )  # fmt: skip
    events = await collect(make_state(schemas=schemas), llm, tools=DownServerTools())
    llm.assert_complete()
    errors = [e.message for e in of(events, "error")]
    assert len(errors) == 2
    for message in errors:
        assert "my_wiki's tools cannot be used now: MCP server my_wiki" in message, message
