"""Prices: genai-prices' bundled table for known models, the deployment's own prices for the
others, "unknown" rather than a made-up zero, and money written for people."""

from __future__ import annotations

import genai_prices.data_snapshot

from workflows import pricing
from workflows.engine.model.money import Cost, Prices
from workflows.execution import setup


def test_a_known_model_is_priced_from_the_table():
    """gpt-4o-mini is in genai-prices' table: input, cached input and output per million."""
    prices = pricing.table_prices("gpt-4o-mini")
    assert prices is not None
    assert (prices.currency, prices.input, prices.cachedInput, prices.output) == (
        "USD",
        0.15,
        0.075,
        0.6,
    )
    assert "OpenAI" in prices.source


def test_the_table_is_read_offline_and_never_updated():
    """The prices come from the table in the wheel: the lookup reaches no network (the test
    guard fails any connection off this machine) and no auto-update is running."""
    pricing.table_prices("gpt-4o-mini")
    snapshot = genai_prices.data_snapshot.get_snapshot()
    assert snapshot.from_auto_update is False


def test_a_known_providers_url_and_a_self_hosted_one_both_find_the_model():
    """The server's URL names the provider when the table knows it; a self-hosted server's
    URL does not stop the lookup by the model's name."""
    openai = pricing.table_prices("gpt-4o-mini", base_url="https://api.openai.com/v1")
    local = pricing.table_prices("gpt-4o-mini", base_url="http://10.0.0.5:8000/v1")
    assert openai is not None and local is not None
    assert openai.input == local.input == 0.15


def test_a_tiered_price_is_taken_at_its_base_tier():
    """Prices that rise past 200,000 prompt tokens are read at their base tier."""
    prices = pricing.table_prices("claude-sonnet-4-5")
    assert prices is not None
    assert (prices.input, prices.cachedInput, prices.output) == (3.0, 0.3, 15.0)


def test_an_unknown_model_has_no_price():
    """A model the table does not know has no price (None), never a price of zero."""
    assert pricing.table_prices("our-own-finetune-7b") is None


def test_the_deployments_prices_win_over_the_table(settings):
    """POWERON_PRICE_* replace the table's price, in their own currency; cached input costs
    as much as input unless it has a price of its own."""
    settings.POWERON_LLM_API_KEY = "sk-test-not-real"
    settings.POWERON_LLM_MODEL = "gpt-4o-mini"
    settings.POWERON_PRICE_INPUT, settings.POWERON_PRICE_OUTPUT = 1.0, 3.0
    settings.POWERON_PRICE_CACHED_INPUT = None
    settings.POWERON_PRICE_CURRENCY = "EUR"
    prices = setup.model_prices()
    assert prices == Prices(
        currency="EUR", input=1.0, cachedInput=1.0, output=3.0, source="POWERON_PRICE_* settings"
    )
    settings.POWERON_PRICE_CACHED_INPUT = 0.25
    assert setup.model_prices().cachedInput == 0.25


def test_a_self_hosted_model_gets_the_deployments_price_and_otherwise_none(settings):
    """An unknown model is priced by POWERON_PRICE_* when set, and has no price otherwise."""
    settings.POWERON_LLM_BASE_URL = "http://10.0.0.5:8000/v1"
    settings.POWERON_LLM_MODEL = "our-own-finetune-7b"
    settings.POWERON_PRICE_INPUT = settings.POWERON_PRICE_OUTPUT = None
    assert setup.model_prices() is None
    settings.POWERON_PRICE_INPUT, settings.POWERON_PRICE_OUTPUT = 0.0, 0.0
    assert setup.model_prices().output == 0.0  # it costs nothing, said so by the deployment


def test_only_input_or_only_output_is_not_a_price(settings):
    """Half a price is not a price: input and output must both be set."""
    assert pricing.deployment_prices(input=1.0, cached_input=None, output=None, currency="") is None


def test_the_demo_model_has_no_price(settings):
    """Without a model configured the demo model answers: nothing to price."""
    settings.POWERON_LLM_BASE_URL = settings.POWERON_LLM_API_KEY = ""
    settings.POWERON_PRICE_INPUT, settings.POWERON_PRICE_OUTPUT = 1.0, 1.0
    assert setup.model_prices() is None


def test_money_is_written_so_a_fraction_of_a_cent_never_reads_as_nothing():
    """Two decimals from 1, four below, two significant digits under a cent."""
    assert pricing.money(1.5, "USD") == "$1.50"
    assert pricing.money(0.0123, "USD") == "$0.0123"
    assert pricing.money(0.000153, "USD") == "$0.00015"
    assert pricing.money(0.0000042, "EUR") == "0.0000042 EUR"
    assert pricing.money(0, "USD") == "$0.00"


def test_costs_sum_by_currency_and_unknown_stays_unknown():
    """Known costs add up; none known is unknown; another currency is not added in."""
    usd = Cost.of("USD", input=0.001, cachedInput=0.0005, output=0.002)
    assert pricing.cost_sum([usd, None, usd]) == Cost.of(
        "USD", input=0.002, cachedInput=0.001, output=0.004
    )
    assert pricing.cost_sum([None, None]) is None
    eur = Cost.of("EUR", input=1.0, cachedInput=0.0, output=0.0)
    assert pricing.cost_sum([usd, eur]) == usd
    assert pricing.cost_text(None) == "price unknown"
    assert pricing.cost_parts(usd) == (
        "$0.0035 (input $0.0010, cached input $0.00050, output $0.0020)"
    )
