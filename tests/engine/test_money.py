"""Money in the loop: each call, step and round priced from its usage, and a daily budget in
money that stops the loop like the token budget."""

from __future__ import annotations

import pytest

from tests.engine.conftest import (
    collect,
    make_state,
    of,
    one_search_round,
    params,
    select,
    taskplan,
)
from workflows.engine.model.money import Cost, Prices
from workflows.engine.records.state import Budgets
from workflows.engine.testing import ScriptedLLM

PRICES = Prices(currency="EUR", input=2.0, cachedInput=0.5, output=8.0)


def priced(usage) -> float:
    """A call's cost from its usage event, computed here by hand."""
    uncached = usage.promptTokens - usage.cachedTokens
    return (uncached * 2.0 + usage.cachedTokens * 0.5 + usage.completionTokens * 8.0) / 1e6


def test_cached_input_is_priced_apart_and_cheaper() -> None:
    """A call whose prompt was read from the cache costs less than the same call without."""
    cold = PRICES.cost(prompt_tokens=10_000, cached_tokens=0, completion_tokens=500)
    warm = PRICES.cost(prompt_tokens=10_000, cached_tokens=8_000, completion_tokens=500)
    assert cold == Cost(currency="EUR", input=0.02, cachedInput=0.0, output=0.004, total=0.024)
    assert warm == Cost(currency="EUR", input=0.004, cachedInput=0.004, output=0.004, total=0.012)
    assert warm.total < cold.total


async def test_every_call_step_and_round_carries_its_cost() -> None:
    """Each usage event is priced from its own tokens; a step's cost is the sum of its calls',
    a round's the sum of all."""
    events = await collect(make_state(prices=PRICES), one_search_round())
    usages = of(events, "usage")
    assert usages and all(u.cost.total == pytest.approx(priced(u), abs=1e-9) for u in usages)
    step = [s for s in of(events, "step") if s.status != "started"][0]
    in_step = [u for u in usages if (u.task, u.action) == (step.task, step.action)]
    assert step.cost.total == pytest.approx(sum(priced(u) for u in in_step), abs=1e-9)
    assert step.cost.currency == "EUR"
    end = of(events, "round")[-1]
    assert end.cost.total == pytest.approx(sum(priced(u) for u in usages), abs=1e-9)


async def test_without_prices_costs_are_unknown_not_zero() -> None:
    """A model of unknown price leaves every cost empty (None), never a made-up 0."""
    events = await collect(make_state(), one_search_round())
    assert all(u.cost is None for u in of(events, "usage"))
    assert all(s.cost is None for s in of(events, "step"))
    assert of(events, "round")[-1].cost is None


async def test_the_daily_cost_budget_stops_the_loop_with_its_reason() -> None:
    """With the day's money nearly spent by earlier rounds, the loop stops after the step that
    spends the rest (no refine call after it), with the code cost_budget and a reason that
    says what to do."""
    llm = ScriptedLLM([taskplan("t"), select(), params(query="q")])
    budgets = Budgets(tokens=None, day_cost=1.0, day_cost_used=0.998)
    events = await collect(make_state(prices=PRICES, budgets=budgets), llm)
    llm.assert_complete()
    status = [e for e in of(events, "status") if e.code != "info"][0]
    assert status.code == "cost_budget"
    assert "daily cost budget is spent" in status.reason and "EUR" in status.reason
    assert "raise the daily cost budget" in status.reason
    assert of(events, "task")[-1].status == "failed"
