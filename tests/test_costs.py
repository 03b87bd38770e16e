"""Cost in money through the whole app: a scripted run's stored costs are its stored usage
times the configured prices, per call, step, round and workflow; the daily budget in money
stops a round; exports and admin show the same figures."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.urls import reverse

from tests.factories import workflow_with_history
from tests.support.chat_app import workflow_with_upload
from tests.support.priced import PRICES, one_extract, priced
from workflows import exports
from workflows.engine.model.money import Cost
from workflows.engine.records.events import StepEvent, UsageEvent
from workflows.execution import launcher, recording
from workflows.models import ChatWorkflow


def policy(body: dict):
    """One extract step, then stop; every reply reports its usage, cached tokens among it."""
    return one_extract(body, usage=True)


@pytest.fixture
def prices(settings, model):
    """The fake model server, priced by the deployment's own settings."""
    settings.POWERON_PRICE_INPUT = PRICES["input"]
    settings.POWERON_PRICE_CACHED_INPUT = PRICES["cached"]
    settings.POWERON_PRICE_OUTPUT = PRICES["output"]
    settings.POWERON_PRICE_CURRENCY = "EUR"
    model.add(*[policy] * 40)
    return model


async def run_round(owner, workflow=None, text="Summarise") -> tuple[ChatWorkflow, str]:
    if workflow is None:
        workflow, upload = await workflow_with_upload(owner)
        documents = [upload.pk]
    else:
        documents = []
    await launcher.start_round(
        workflow_id=workflow.pk, user=owner, text=text, document_ids=documents
    )
    status = await launcher.wait_for(workflow.pk)
    await workflow.arefresh_from_db()
    return workflow, status


@database_sync_to_async
def payloads(workflow: ChatWorkflow, kind: str) -> list[tuple[int, int, int, dict]]:
    rows = workflow.events.filter(type=kind).order_by("seq")
    return list(rows.values_list("round", "task", "action", "payload"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_stored_costs_are_the_stored_usage_times_the_configured_prices(alice, prices):
    """Every call's cost is its usage times POWERON_PRICE_* (cached input at its own price);
    a step's is the sum of its calls', a round's and the workflow's the sum of all."""
    workflow, status = await run_round(alice)
    assert status == ChatWorkflow.Status.COMPLETED
    calls = await payloads(workflow, "usage")
    assert len(calls) >= 4 and any(call["cachedTokens"] for _, _, _, call in calls)
    for *_, call in calls:
        assert call["cost"]["currency"] == "EUR"
        assert call["cost"]["total"] == pytest.approx(priced(call), abs=1e-9)
        cached = call["cachedTokens"] * PRICES["cached"] / 1e6
        assert call["cost"]["cachedInput"] == pytest.approx(cached, abs=1e-9)
    steps = [s for s in await payloads(workflow, "step") if s[3]["status"] != "started"]
    assert steps
    for round, task, action, step in steps:
        own = [c for r, t, a, c in calls if (r, t, a) == (round, task, action)]
        assert own and step["cost"]["total"] == pytest.approx(sum(map(priced, own)), abs=1e-9)
    everything = sum(priced(call) for *_, call in calls)
    ended = (await payloads(workflow, "round"))[-1][3]
    assert ended["cost"]["total"] == pytest.approx(everything, abs=1e-9)
    assert workflow.cost_currency == "EUR"
    assert float(workflow.cost) == pytest.approx(everything, abs=1e-9)
    assert calls[-1][3]["workflowCost"] == pytest.approx(everything, abs=1e-9)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_exports_carry_the_costs(alice, prices):
    """The JSON export holds the workflow's cost by kind of token and each round's and
    step's; the Markdown says them in words."""
    workflow, _ = await run_round(alice)
    calls = await payloads(workflow, "usage")
    everything = sum(priced(call) for *_, call in calls)
    data = await database_sync_to_async(exports.workflow_as_json)(workflow)
    assert data["costBasis"] == "priced"
    assert data["cost"]["currency"] == "EUR"
    assert data["cost"]["total"] == pytest.approx(everything, abs=1e-9)
    cached = sum(call["cachedTokens"] for *_, call in calls) * PRICES["cached"] / 1e6
    assert data["cost"]["cachedInput"] == pytest.approx(cached, abs=1e-9)
    assert [r["round"] for r in data["rounds"]] == [1]
    assert data["steps"] and all(s["cost"]["currency"] == "EUR" for s in data["steps"])
    json.dumps(data)  # serialisable as it is
    text = await database_sync_to_async(exports.workflow_as_markdown)(workflow)
    total = Cost.model_validate(data["cost"])
    assert f"Cost: {total.total:.4f} EUR (input" in text
    assert "tokens (" in text and "cached) · " in text  # each step and round


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_the_daily_cost_budget_stops_the_next_round_before_it_calls_the_model(
    alice, prices, settings
):
    """Once a workflow's day has spent POWERON_DAILY_COST_BUDGET, its next round stops with
    the reason, without a model call."""
    workflow, status = await run_round(alice)
    assert status == ChatWorkflow.Status.COMPLETED
    settings.POWERON_DAILY_COST_BUDGET = float(workflow.cost) / 2
    asked = len(prices.requests)
    workflow, status = await run_round(alice, workflow, text="Once more")
    assert status == ChatWorkflow.Status.FAILED
    assert len(prices.requests) == asked
    assert "daily cost budget is spent" in workflow.status_reason
    assert "EUR" in workflow.status_reason


@pytest.mark.django_db
def test_admin_lists_steps_with_tokens_cost_and_duration(admin_client, alice):
    """The Steps list has a column each for tokens, cached tokens, cost and duration; the
    event list and a workflow's timeline show cost and duration too."""
    workflow = workflow_with_history(alice)
    cost = Cost.of("USD", input=0.0012, cachedInput=0.0001, output=0.0024)
    recording.record(
        workflow.pk,
        UsageEvent(round=1, task=1, action=1, kind="select", promptTokens=2000,
                   completionTokens=300, cachedTokens=1024, cost=cost, latencyMs=640),
    )  # fmt: skip
    recording.record(
        workflow.pk,
        StepEvent(round=1, task=1, action=1, status="success", step=1, method="web.search",
                  tokens=2300, cachedTokens=1024, durationMs=1234, cost=cost),
    )  # fmt: skip
    page = admin_client.get(reverse("admin:workflows_steprecord_changelist")).content.decode()
    for column in ("column-tokens", "column-cached", "column-cost", "column-duration"):
        assert column in page
    assert '<td class="field-tokens">2,300</td>' in page
    assert '<td class="field-cached">1,024</td>' in page
    assert "$0.0037 (input $0.0012, cached input $0.00010, output $0.0024)" in page
    assert '<td class="field-duration">1,234 ms</td>' in page
    events = admin_client.get(reverse("admin:workflows_workflowevent_changelist")).content
    assert b"$0.0037 (input" in events and b"640 ms" in events
    workflows = admin_client.get(reverse("admin:workflows_chatworkflow_changelist")).content
    assert b"$0.0037" in workflows
    change = admin_client.get(reverse("admin:workflows_chatworkflow_change", args=[workflow.pk]))
    assert b"$0.0037 (input $0.0012, cached input $0.00010" in change.content


@pytest.mark.django_db
def test_admin_says_price_unknown_and_demo(admin_client, alice):
    """A step of unknown price says so; a demo-model step shows "demo", not numbers."""
    workflow = workflow_with_history(alice)
    recording.record(
        workflow.pk,
        StepEvent(round=1, task=1, action=1, status="success", step=1, tokens=900,
                  durationMs=10),
    )  # fmt: skip
    recording.record(
        workflow.pk,
        StepEvent(round=1, task=1, action=2, status="success", step=2, model="demo model",
                  durationMs=10),
    )  # fmt: skip
    page = admin_client.get(reverse("admin:workflows_steprecord_changelist")).content.decode()
    assert '<td class="field-cost">price unknown</td>' in page
    assert '<td class="field-cost">demo</td>' in page
    assert '<td class="field-tokens">demo</td>' in page


def test_the_demo_model_shows_demo_instead_of_figures():
    """A demo-model step, round and call show "demo" where tokens and cost would be; a real
    model of unknown price shows its tokens and "price unknown"."""
    from workflows.engine.records.events import RoundEvent
    from workflows.events.contract import Envelope
    from workflows.events.rendering import render_event

    def html(event) -> str:
        return render_event(Envelope(workflow=1, seq=3, event=event))

    step = StepEvent(round=1, task=1, action=1, status="success", step=1, durationMs=420,
                     model="demo model")  # fmt: skip
    assert "success · 0.4 s · demo</span>" in html(step)
    ended = RoundEvent(round=1, status="completed", model="demo model", durationMs=900)
    assert " · demo" in html(ended) and "tokens" not in html(ended)
    call = UsageEvent(round=1, kind="select", model="demo model", workflowTokens=0)
    assert ">demo</span>" in html(call)
    real = step.model_copy(update={"model": "gpt-4o-mini", "tokens": 700})
    assert '700 tok · <span class="cost">price unknown</span>' in html(real)
