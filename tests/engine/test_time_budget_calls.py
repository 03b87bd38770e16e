"""The round's time budget cuts a model call in flight: the round ends in its budget, not at
the call's own timeout, and keeps what was done (through the real client and a localhost
model server that answers late).

The round's clock is held still, so every call before the slow one has the whole budget
whatever the machine's load; only the slow call meets the budget, in real seconds."""

from __future__ import annotations

import asyncio

import pytest

from tests.engine.conftest import collect, make_state, of, params, select, taskplan
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.fake_tools import FakeToolExecutor
from workflows.engine.loop.deadline import TimeBudgetSpent, within
from workflows.engine.loop.guards import Budget
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.records.state import Budgets
from workflows.engine.testing import ScriptedLLM

BUDGET = 3.0
"""Seconds the slow call may take: long enough for a loaded machine's local calls, whose
clock is held still anyway."""
LATE = 120.0
"""How late the slow reply would come: far past the budget and the client's timeout."""


def still() -> float:
    return 0.0


async def run(*replies: object) -> list:
    with FakeOpenAIServer() as server:
        server.add(*replies)
        async with OpenAICompatibleLLM(
            base_url=server.url, api_key="k", model="m", timeout=LATE * 2, max_retries=0
        ) as llm:
            state = make_state(budgets=Budgets(seconds=BUDGET))
            return await collect(state, llm, clock=still)


async def test_a_call_in_flight_when_the_time_is_up_is_cut_and_the_work_kept() -> None:
    refine = {"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": "Found."}
    events = await run(taskplan("t"), select(), params(query="q"), FakeReply(refine, delay=LATE))
    statuses = [(e.code, e.reason) for e in of(events, "status") if e.code != "info"]
    assert [code for code, _ in statuses] == ["time_budget"]
    assert of(events, "status")[-1].task == 1
    assert f"time budget is spent ({BUDGET:g} s)" in statuses[0][1]
    steps = of(events, "step")
    assert [s.status for s in steps] == ["started", "stopped"]
    assert "time budget" in steps[-1].reason
    assert of(events, "task")[-1].status == "incomplete"
    assert len(of(events, "observe")) == 1  # the search that ran is kept
    answer = of(events, "message")[-1]
    assert answer.status == "failed" and answer.content.startswith("I stopped early: ")
    assert "- Task 1 (incomplete): " in answer.content
    assert "web.search (succeeded)" in answer.content
    final = of(events, "round")[-1]
    assert final.status == "failed" and "time budget" in final.reason


async def test_an_answer_cut_by_the_time_budget_keeps_what_was_written() -> None:
    events = await run(
        taskplan("t"),
        select(),
        params(query="q"),
        {"decision": "stop", "reason": "Done.", "criteriaMet": True},  # no review: one task
        FakeReply("The first part of the answer. The rest", stall=LATE),
    )
    answer = of(events, "message")[-1]
    # The server stalls after the first piece: that piece is kept, and why it ends.
    assert answer.content == (
        f"The\n\nI stopped here: This round's time budget is spent ({BUDGET:g} s); a new "
        "message starts with a fresh budget."
    )
    assert answer.status == "failed"
    assert of(events, "round")[-1].status == "failed"


async def test_no_call_starts_once_the_budget_is_spent() -> None:
    now = [0.0]
    budget = Budget(Budgets(seconds=5), clock=lambda: now[0])
    now[0] = 5.0

    async def never() -> str:
        raise AssertionError("the call started")

    call = never()
    with pytest.raises(TimeBudgetSpent, match=r"time budget is spent \(5 s\)"):
        await within(budget, call)
    assert call.cr_frame is None  # closed, never run: no "never awaited" warning


async def test_a_calls_own_timeout_is_not_taken_for_the_budgets() -> None:
    budget = Budget(Budgets(seconds=60))

    async def times_out() -> str:
        raise TimeoutError("the call's own")

    with pytest.raises(TimeoutError, match="the call's own"):
        await within(budget, times_out())


class HangingTools(FakeToolExecutor):
    """The fake catalog whose every action runs until it is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled = False

    async def execute(self, name, params, ctx):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


async def test_an_action_running_when_the_time_is_up_is_cut_too() -> None:
    """An action (with any model calls of its own) is cut where the budget runs out; the
    round ends as when a model call is cut."""
    tools = HangingTools()
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q")])
    state = make_state(budgets=Budgets(seconds=BUDGET))
    events = await collect(state, llm, tools=tools, clock=still)
    llm.assert_complete()
    assert tools.cancelled
    assert [e.code for e in of(events, "status") if e.code != "info"] == ["time_budget"]
    assert [s.status for s in of(events, "step")] == ["started", "stopped"]
    assert of(events, "task")[-1].status == "incomplete"
    assert of(events, "round")[-1].status == "failed"
