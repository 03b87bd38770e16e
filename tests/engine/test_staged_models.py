"""Two models in one round, through the real openai client against the localhost fake model
server: the small model answers Stage 2 and the review, the main model everything else, and
each call is priced by the model that made it."""

from __future__ import annotations

import pytest

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.engine.test_integration_openai import schema_name
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.money import Cost, Prices
from workflows.engine.model.staged import StagedLLM

MAIN = Prices(currency="EUR", input=4.0, cachedInput=1.0, output=16.0)
SMALL = Prices(currency="EUR", input=0.1, cachedInput=0.025, output=0.4)


@pytest.fixture
async def staged(fake_openai):
    """The main model "big-model" and the small "tiny-model", on the same fake server."""
    options = {"base_url": fake_openai.url, "api_key": "sk-test", "max_retries": 0}
    async with StagedLLM(
        OpenAICompatibleLLM(model="big-model", **options),
        OpenAICompatibleLLM(model="tiny-model", **options),
    ) as llm:
        yield llm


def search_then_review() -> list:
    """A search whose Stage 2 sets the query; refine stops without the criteria met, so the
    review judges the task; then the answer."""
    return [
        taskplan("Find facts"),
        select("web.search"),
        params(query="PowerOn"),
        stop(criteria_met=False, reason="Nothing more to find."),
        {"status": "success", "reason": "Found.", "improvements": []},
        "PowerOn is a chat.",
    ]


def priced_state(**overrides):
    values = {"prices": MAIN, "small_model": "tiny-model", "small_prices": SMALL}
    return make_state(**{**values, **overrides})


async def test_stage_two_and_the_review_go_to_the_small_model(fake_openai, staged, store):
    """Stage 2 and the review are sent to the small model; the task plan, Stage 1, refine
    and the answer to the main one; every usage event names the model that answered."""
    fake_openai.add(*search_then_review())
    events = await collect(priced_state(), staged, store=store)
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    sent = [(schema_name(body) or "answer", body["model"]) for body in fake_openai.requests]
    assert sent == [
        ("TaskPlan", "big-model"),
        ("ActionSelection", "big-model"),
        ("ActionParameters", "tiny-model"),
        ("RefinementDecision", "big-model"),
        ("TaskReview", "tiny-model"),
        ("answer", "big-model"),
    ]
    used = [(usage.kind, usage.model) for usage in of(events, "usage")]
    assert used == [
        ("taskplan", "big-model"),
        ("select", "big-model"),
        ("parameters", "tiny-model"),
        ("refine", "big-model"),
        ("review", "tiny-model"),
        ("final", "big-model"),
    ]
    assert events[0].model == "big-model"  # the round names the main model


async def test_each_call_is_priced_by_the_model_that_made_it(fake_openai, staged, store):
    """A call of the small model costs its tokens at the small model's prices, the others at
    the main model's; the step lists its calls by kind and model with their cost, and the
    step's and the round's cost are the sums."""
    fake_openai.add(*search_then_review())
    events = await collect(priced_state(), staged, store=store)
    usages = of(events, "usage")
    for usage in usages:
        prices = SMALL if usage.model == "tiny-model" else MAIN
        expected = prices.cost(
            prompt_tokens=usage.promptTokens,
            cached_tokens=usage.cachedTokens,
            completion_tokens=usage.completionTokens,
        )
        assert usage.cost == expected
    small = next(u for u in usages if u.kind == "parameters")
    assert (
        small.cost.total
        < MAIN.cost(
            prompt_tokens=small.promptTokens,
            cached_tokens=0,
            completion_tokens=small.completionTokens,
        ).total
    )
    (step,) = [e for e in of(events, "step") if e.status != "started"]
    assert [(c.kind, c.model) for c in step.calls] == [
        ("select", "big-model"),
        ("parameters", "tiny-model"),
        ("refine", "big-model"),
    ]
    in_step = [u for u in usages if u.action == step.action]
    assert step.cost.total == pytest.approx(sum(u.cost.total for u in in_step), abs=1e-9)
    assert [c.cost for c in step.calls] == [u.cost for u in in_step]
    total = sum((u.cost for u in usages), Cost.zero("EUR"))
    assert events[-1].cost.total == pytest.approx(total.total, abs=1e-9)


async def test_a_small_model_without_a_price_leaves_the_sums_unknown(fake_openai, staged, store):
    """When the small model's price is unknown, its calls cost None and so do the step and
    the round they are part of: never a total that silently leaves them out."""
    fake_openai.add(*search_then_review())
    events = await collect(priced_state(small_prices=None), staged, store=store)
    usages = of(events, "usage")
    assert {u.model for u in usages if u.cost is None} == {"tiny-model"}
    assert all(u.cost is not None for u in usages if u.model == "big-model")
    (step,) = [e for e in of(events, "step") if e.status != "started"]
    assert step.cost is None
    assert events[-1].cost is None


async def test_a_local_small_model_gets_its_own_servers_layout(fake_openai, staged, store):
    """A hosted main model (the shared head, no schema) beside a small model on a local
    server (narrow schemas): the review the small model answers comes with its strict schema
    (the criteria to tick as an enum) and without the head's catalog and answers; the main
    model's calls keep the shared head."""
    fake_openai.add(*search_then_review())
    state = priced_state(schemas="shared", small_schemas="narrow")
    events = await collect(state, staged, store=store)
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    by_model: dict[str, list[dict]] = {}
    for body in fake_openai.requests:
        by_model.setdefault(body["model"], []).append(body)
    review = next(b for b in by_model["tiny-model"] if schema_name(b) == "TaskReview")
    schema = review["response_format"]["json_schema"]
    assert schema["strict"] is True
    items = schema["schema"]["properties"]["metCriteria"]["items"]
    assert items.get("enum", [items.get("const")]) == ["It is done."]
    assert "## Catalog" not in review["messages"][0]["content"]
    assert "## Answers" not in review["messages"][0]["content"]
    for body in by_model["big-model"]:
        assert schema_name(body) is None  # the shared head: no schema
    assert "## Answers" in by_model["big-model"][0]["messages"][0]["content"]
