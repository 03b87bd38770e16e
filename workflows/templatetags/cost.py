"""Tokens, money and time in templates: costs for people, "price unknown", and "demo" for the
demo model, which spends neither; durations in one style."""

from __future__ import annotations

from django import template

from workflows import pricing
from workflows.engine.model import nature
from workflows.engine.model.money import Cost
from workflows.engine.records.events import RoundEvent, StepEvent, ThoughtEvent, UsageEvent
from workflows.engine.records.parts import CallSpend
from workflows.execution import setup
from workflows.models import ChatWorkflow

register = template.Library()


@register.filter
def is_demo(event: UsageEvent | StepEvent | ThoughtEvent | RoundEvent) -> bool:
    """Whether the demo model answered the event's round (its figures are not real)."""
    return nature.is_demo(event.model)


@register.filter
def seconds(ms: int | float | None) -> str:
    """A duration in milliseconds for people: "0.4 s", "12.1 s", "2 min 5 s"."""
    return pricing.seconds_text(ms)


@register.filter
def cost_text(cost: Cost | None) -> str:
    """A cost for people: "$0.0012", or "price unknown"."""
    return pricing.cost_text(cost)


@register.filter
def cost_parts(cost: Cost | None) -> str:
    """A cost by kind of token: input, cached input, output."""
    return pricing.cost_parts(cost)


@register.filter
def calls_text(calls: list[CallSpend]) -> str:
    """A step's model calls by kind, with the model and the cost of each."""
    return pricing.calls_text(calls)


@register.filter
def money(amount: float | None, currency: str) -> str:
    """An amount in a currency ("price unknown" without one)."""
    return "price unknown" if amount is None else pricing.money(amount, currency)


@register.simple_tag
def workflow_spend(workflow: ChatWorkflow) -> str:
    """The workflow's tokens and cost so far, as its header shows them."""
    tokens = workflow.total_tokens
    if workflow.cost_currency:
        return f"{tokens} tokens · {pricing.money(float(workflow.cost), workflow.cost_currency)}"
    if not tokens:
        return "demo" if not setup.model_configured() else "0 tokens"
    return f"{tokens} tokens · price unknown"
