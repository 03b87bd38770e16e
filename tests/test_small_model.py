"""A small model beside the main one (POWERON_LLM_MODEL_SMALL): built from its own settings,
priced by its own price, and through the whole app each stored call, step and round costs
what its own model's tokens cost."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from tests.support.chat_app import workflow_with_upload
from tests.support.fake_openai import FakeReply
from tests.support.priced import PRICES, USAGE, priced, schema_of
from tests.support.replies import params, review, select, stop, taskplan
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.staged import StagedLLM
from workflows.execution import launcher, setup
from workflows.models import ChatWorkflow

SMALL_PRICES = {"input": 0.1, "cached": 0.02, "output": 0.4}
"""The small model's prices in these tests, per million tokens, in EUR."""


@pytest.fixture
def small(settings, model):
    """A small model on the fake server beside the main one, both priced by the deployment."""
    settings.POWERON_LLM_MODEL = "big-model"
    settings.POWERON_LLM_MODEL_SMALL = "tiny-model"
    settings.POWERON_PRICE_INPUT = PRICES["input"]
    settings.POWERON_PRICE_CACHED_INPUT = PRICES["cached"]
    settings.POWERON_PRICE_OUTPUT = PRICES["output"]
    settings.POWERON_PRICE_INPUT_SMALL = SMALL_PRICES["input"]
    settings.POWERON_PRICE_CACHED_INPUT_SMALL = SMALL_PRICES["cached"]
    settings.POWERON_PRICE_OUTPUT_SMALL = SMALL_PRICES["output"]
    settings.POWERON_PRICE_CURRENCY = "EUR"
    return model


async def test_without_a_small_model_the_main_model_answers_everything(settings, model):
    """POWERON_LLM_MODEL_SMALL empty (the default): one model, no second client."""
    settings.POWERON_LLM_MODEL_SMALL = ""
    llm = setup.build_llm()
    assert isinstance(llm, OpenAICompatibleLLM)
    assert setup.model_prices(small=True) is None


async def test_the_small_model_has_its_own_server_and_key_else_the_main_ones(settings, model):
    """The small model's server and key are its own when set, and the main model's when not."""
    settings.POWERON_LLM_MODEL_SMALL = "tiny-model"
    llm = setup.build_llm()
    assert isinstance(llm, StagedLLM)
    assert (llm.main.model, llm.small.model) == (settings.POWERON_LLM_MODEL, "tiny-model")
    assert llm.small.client.base_url == llm.main.client.base_url
    assert llm.small.client.api_key == "sk-test-not-real"
    settings.POWERON_LLM_BASE_URL_SMALL = "http://127.0.0.1:9/v1"
    settings.POWERON_LLM_API_KEY_SMALL = "sk-small"
    llm = setup.build_llm()
    assert str(llm.small.client.base_url).startswith("http://127.0.0.1:9/v1")
    assert llm.small.client.api_key == "sk-small"
    assert llm.small.advice["model"] == "Check POWERON_LLM_MODEL_SMALL (now 'tiny-model')."
    assert "POWERON_LLM_BASE_URL_SMALL" in llm.small.advice["unreachable"]


async def test_the_demo_model_has_no_small_model(settings):
    """Without a configured model the demo answers everything, whatever the small setting."""
    settings.POWERON_LLM_BASE_URL = settings.POWERON_LLM_API_KEY = ""
    settings.POWERON_LLM_MODEL_SMALL = "tiny-model"
    assert setup.small_model() == "" and setup.model_prices(small=True) is None
    assert setup.build_llm().label == "demo model"


def test_the_small_models_price_is_its_own(settings, model):
    """POWERON_PRICE_*_SMALL price the small model; without them, genai-prices' table does
    (gpt-4.1-nano's price, not the main model's)."""
    settings.POWERON_LLM_MODEL = "gpt-4.1-mini"
    settings.POWERON_LLM_MODEL_SMALL = "gpt-4.1-nano"
    nano = setup.model_prices(small=True)
    assert nano is not None and "gpt-4.1-nano" in nano.source
    assert nano.input < setup.model_prices().input
    settings.POWERON_PRICE_INPUT_SMALL, settings.POWERON_PRICE_OUTPUT_SMALL = 0.5, 1.5
    own = setup.model_prices(small=True)
    assert (own.input, own.cachedInput, own.output) == (0.5, 0.5, 1.5)


def with_review(body: dict) -> FakeReply:
    """An extract whose Stage 2 sets its prompt; refine stops without the criteria met, so the
    review judges it; each reply reports the usage of tests/support/priced.py."""
    schema = schema_of(body)
    replies = {
        "TaskPlan": taskplan("Summarise"),
        "ActionSelection": select(
            "document.extract",
            requiredInputDocuments=["docList:round1_upload"],
            parametersSchema={"fields": [{"name": "aiPrompt", "type": "string"}]},
        ),
        "ActionParameters": params(aiPrompt="The main points."),
        "RefinementDecision": stop(False, "Nothing more to do."),
        "TaskReview": review(),
    }
    prompt, cached, completion = USAGE.get(schema, (3000, 2048, 210))
    reported = {"prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": completion}
    return FakeReply(content=replies.get(schema, "Done."), usage=reported)


def small_priced(usage: dict) -> float:
    prompt, cached = usage["promptTokens"], usage["cachedTokens"]
    return (
        (prompt - cached) * SMALL_PRICES["input"]
        + cached * SMALL_PRICES["cached"]
        + usage["completionTokens"] * SMALL_PRICES["output"]
    ) / 1e6


@database_sync_to_async
def payloads(workflow: ChatWorkflow, kind: str) -> list[dict]:
    return list(workflow.events.filter(type=kind).order_by("seq").values_list("payload", flat=True))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_each_stored_call_costs_its_own_models_price(alice, small):
    """Stage 2 and the review reach the small model and are stored at its price; the other
    calls at the main model's; the step lists its calls with their models and costs; the
    round's and the workflow's cost are the sums."""
    small.add(*[with_review] * 20)
    workflow, upload = await workflow_with_upload(alice)
    await launcher.start_round(
        workflow_id=workflow.pk, user=alice, text="Summarise", document_ids=[upload.pk]
    )
    assert await launcher.wait_for(workflow.pk) == ChatWorkflow.Status.COMPLETED
    by_kind = {schema_of(body) or "answer": body["model"] for body in small.requests}
    assert by_kind["ActionParameters"] == by_kind["TaskReview"] == "tiny-model"
    assert by_kind["TaskPlan"] == by_kind["RefinementDecision"] == "big-model"
    calls = await payloads(workflow, "usage")
    for call in calls:
        mine = small_priced if call["model"] == "tiny-model" else priced
        assert call["cost"]["total"] == pytest.approx(mine(call), abs=1e-9)
    assert {call["model"] for call in calls} == {"big-model", "tiny-model"}
    (step,) = [s for s in await payloads(workflow, "step") if s["status"] != "started"]
    assert {(c["kind"], c["model"]) for c in step["calls"]} >= {
        ("select", "big-model"),
        ("parameters", "tiny-model"),
    }
    everything = sum((small_priced if c["model"] == "tiny-model" else priced)(c) for c in calls)
    ended = (await payloads(workflow, "round"))[-1]
    assert ended["cost"]["total"] == pytest.approx(everything, abs=1e-9)
    await workflow.arefresh_from_db()
    assert float(workflow.cost) == pytest.approx(everything, abs=1e-9)


def test_a_steps_badge_says_what_each_kind_of_call_cost_on_which_model():
    """The closed step's badge carries, in its title, every kind of call with its model,
    tokens and cost; the export's line does too when the step used two models."""
    from tests.support.page import parse
    from workflows import exports
    from workflows.engine.model.money import Cost
    from workflows.engine.records.events import StepEvent
    from workflows.engine.records.parts import CallSpend
    from workflows.events.contract import Envelope
    from workflows.events.rendering import render_event

    def cost(total: float) -> Cost:
        return Cost.of("USD", input=total, cachedInput=0.0, output=0.0)

    calls = [
        CallSpend(kind="select", model="gpt-4.1-mini", tokens=1500, cost=cost(0.0006)),
        CallSpend(kind="parameters", model="gpt-4.1-nano", tokens=300, cost=cost(0.00003)),
    ]
    step = StepEvent(
        round=1, task=1, action=1, status="success", step=1, method="web.search",
        durationMs=900, tokens=1800, cost=cost(0.00063), model="gpt-4.1-mini", calls=calls,
    )  # fmt: skip
    html = render_event(Envelope(workflow=1, seq=5, event=step))
    (badge,) = [e for top in parse(html) for e in top.walk() if e.id == "step-1-1-1-badge"]
    title = badge.attrs["title"]
    assert "select on gpt-4.1-mini: 1,500 tok, $0.00060" in title
    assert "parameters on gpt-4.1-nano: 300 tok, $0.000030" in title
    line = exports.telemetry(step)
    assert "parameters on gpt-4.1-nano" in line and "select on gpt-4.1-mini" in line


def test_the_small_models_calls_follow_its_own_server(settings, model):
    """With POWERON_LLM_SCHEMAS=auto, the small model's calls are laid out for its server: a
    local small model beside a hosted main one gets narrow schemas; on the main model's
    server (its URL not set), the main model's layout."""
    settings.POWERON_LLM_SCHEMAS = "auto"
    settings.POWERON_LLM_BASE_URL = "https://api.openai.com/v1"
    settings.POWERON_LLM_MODEL_SMALL = "qwen2.5-0.5b"
    settings.POWERON_LLM_BASE_URL_SMALL = "http://127.0.0.1:8081/v1"
    assert (setup.call_schemas(), setup.call_schemas(small=True)) == ("shared", "narrow")
    settings.POWERON_LLM_BASE_URL_SMALL = ""
    assert setup.call_schemas(small=True) == "shared"
