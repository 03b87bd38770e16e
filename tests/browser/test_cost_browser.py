"""Cost in money on the page: each step, the round and the workflow show what their model
calls cost, and the figures are the stored usage times the configured prices."""

from __future__ import annotations

import pytest

from tests.support.browser import (
    ARTIFACTS,
    attach,
    send,
    settled_everywhere,
    sign_in_to_new_workflow,
)
from tests.support.priced import PRICE_SETTINGS, one_extract, priced
from workflows import pricing

pytestmark = pytest.mark.browser


def policy(body: dict):
    """Extract the upload, stop, answer; every reply reports its usage."""
    return one_extract(body, answer="Revenue grew 12 percent.", usage=True, delay=0.1)


def run_one_round(page, app_url, model, tmp_path) -> list[dict]:
    """Sign in, upload notes, run a round to its end; the stored usage events (exported)."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, "# Notes\n\nRevenue grew 12 percent in Q3.\n")
    model.add(*[policy] * 20)
    send(page, "Summarise my notes")
    page.wait_for_selector("#wf-status[data-status=completed]")
    exported = page.evaluate("url => fetch(url).then(r => r.json())", page.url + "export.json")
    return [
        {**e["payload"], "round": e["round"], "task": e["task"], "action": e["action"]}
        for e in exported["events"]
        if e["type"] == "usage"
    ]


SETTLES = """([selector, amount]) => {
    const element = document.querySelector(selector);
    return element && Math.abs(parseFloat(element.dataset.cost) - amount) < 1e-9;
}"""


def cost_of(page, selector: str, settles_at: float | None = None) -> tuple[float, str, str]:
    """An element's cost as data (amount, currency) and its text; with `settles_at`, once it
    shows that amount (the round's last events may reach the page after its final status on
    a busy machine; an amount that never comes fails the wait)."""
    if settles_at is not None:
        page.wait_for_function(SETTLES, arg=[selector, settles_at], timeout=30_000)
    element = page.wait_for_selector(f"{selector}[data-cost]")
    return (
        float(element.get_attribute("data-cost")),
        element.get_attribute("data-currency"),
        element.inner_text(),
    )


@pytest.mark.parametrize("app_url", [PRICE_SETTINGS], indirect=True)
def test_costs_on_the_page_are_the_stored_usage_times_the_prices(page, app_url, model, tmp_path):
    """The step's badge, the round's line and the workflow's meter show the cost of their
    model calls: the exported usage times POWERON_PRICE_*, cached input at its own price;
    a reload shows the same."""
    calls = run_one_round(page, app_url, model, tmp_path)
    assert calls and any(call["cachedTokens"] for call in calls)
    everything = sum(priced(call) for call in calls)
    step_calls = [c for c in calls if (c["round"], c["task"], c["action"]) == (1, 1, 1)]
    in_step = sum(priced(call) for call in step_calls)
    assert step_calls and 0 < in_step < everything

    amount, currency, text = cost_of(page, "#step-1-1-1-badge", in_step)
    assert currency == "EUR" and amount == pytest.approx(in_step, abs=1e-9)
    assert pricing.money(in_step, "EUR") in text
    assert "cached input" in page.get_attribute("#step-1-1-1-badge", "title")
    amount, currency, text = cost_of(page, "#round-1-meta .cost", everything)
    assert amount == pytest.approx(everything, abs=1e-9)
    assert text == pricing.money(everything, "EUR")
    amount, currency, text = cost_of(page, "#token-meter", everything)
    assert amount == pytest.approx(everything, abs=1e-9)
    assert text.endswith(f" tokens · {pricing.money(everything, 'EUR')}")
    settled_everywhere(page)
    page.screenshot(path=ARTIFACTS / "cost-01-priced.png")

    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    amount, _, text = cost_of(page, "#token-meter")
    assert amount == pytest.approx(everything, abs=1e-9)
    assert pricing.money(everything, "EUR") in text
    _, _, text = cost_of(page, "#step-1-1-1-badge")
    assert pricing.money(in_step, "EUR") in text


def test_a_model_of_unknown_price_says_so(page, app_url, model, tmp_path):
    """The fake model is in no price table and the deployment set no price: the page says
    "price unknown" instead of a cost of zero."""
    run_one_round(page, app_url, model, tmp_path)
    assert "price unknown" in page.inner_text("#step-1-1-1-badge")
    assert "price unknown" in page.inner_text("#round-1-meta")
    assert "price unknown" in page.inner_text("#token-meter")
    assert page.locator("[data-cost]").count() == 0
