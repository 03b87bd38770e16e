"""What a model's tokens cost: prices from the genai-prices table or the deployment's own,
and money written for people (and the time it took, which the same figures show beside it).

Pure: no Django, no network. genai-prices reads the table bundled in its wheel; it fetches
newer prices only when its `UpdatePrices` is started, which PowerOn never does (a price is
then as old as the installed release of the library, and the deployment's own prices win).
The cost of a call is its usage times these prices (`workflows.engine.model.money`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from workflows.engine.model.money import Cost, Prices
from workflows.engine.records.parts import CallSpend

TABLE_CURRENCY = "USD"
"""The currency of genai-prices' table."""


def deployment_prices(
    *, input: float | None, cached_input: float | None, output: float | None, currency: str
) -> Prices | None:
    """The deployment's own prices per million tokens (None when input and output are not
    both given); cached input costs as much as input unless it has a price of its own."""
    if input is None or output is None:
        return None
    cached = input if cached_input is None else cached_input
    return Prices(
        currency=currency or TABLE_CURRENCY,
        input=input,
        cachedInput=cached,
        output=output,
        source="POWERON_PRICE_* settings",
    )


def table_prices(model: str, *, base_url: str = "", at: datetime | None = None) -> Prices | None:
    """The model's prices in genai-prices' bundled table (None when the table does not know
    it): the provider is found by the server's URL when it is a known one, else by the
    model's name. Prices that rise for very long prompts (over 200,000 tokens) are taken at
    their base tier; PowerOn's prompts stay far below it."""
    from genai_prices import Usage, calc_price

    nothing = Usage(input_tokens=0, output_tokens=0)
    when = at or datetime.now(tz=UTC)
    found = None
    if base_url:
        try:
            found = calc_price(
                nothing, model, provider_api_url=base_url, genai_request_timestamp=when
            )
        except LookupError:
            found = None  # a server the table does not know (self-hosted, a proxy)
    if found is None:
        try:
            found = calc_price(nothing, model, genai_request_timestamp=when)
        except LookupError:
            return None
    table = found.model_price
    input, output = _base(table.input_mtok), _base(table.output_mtok)
    if input is None or output is None:
        return None
    cached = _base(table.cache_read_mtok)
    return Prices(
        currency=TABLE_CURRENCY,
        input=input,
        cachedInput=input if cached is None else cached,
        output=output,
        source=f"genai-prices: {found.provider.name} {found.model.id}",
    )


def _base(price: Any) -> float | None:
    """A table price per million tokens as a number (a tiered price: its base tier)."""
    if price is None:
        return None
    if isinstance(price, Decimal):
        return float(price)
    return float(price.base)


def cost_sum(costs: Iterable[Cost | None]) -> Cost | None:
    """The sum of the known costs (None when none is known); amounts in another currency than
    the first known one are left out (prices changed currency between rounds)."""
    total: Cost | None = None
    for cost in costs:
        if cost is None:
            continue
        if total is None:
            total = cost
        elif cost.currency == total.currency:
            total = total + cost
    return total


def money(amount: float, currency: str) -> str:
    """An amount for people: "$0.0123", "$1.50", "0.00042 EUR" — small amounts keep two
    significant digits, so a fraction of a cent never reads as nothing."""
    if amount <= 0 or amount >= 1:
        places = 2
    elif amount >= 0.01:
        places = 4
    else:
        places = 1 - math.floor(math.log10(amount))
    text = f"{amount:.{places}f}"
    return f"${text}" if currency == "USD" else f"{text} {currency}"


def cost_text(cost: Cost | None) -> str:
    """A cost for people ("price unknown" when there is none)."""
    if cost is None:
        return "price unknown"
    return money(cost.total, cost.currency)


def cost_parts(cost: Cost | None) -> str:
    """A cost by kind of token, for exports and admin."""
    if cost is None:
        return "price unknown"
    return (
        f"{money(cost.total, cost.currency)} (input {money(cost.input, cost.currency)}, "
        f"cached input {money(cost.cachedInput, cost.currency)}, "
        f"output {money(cost.output, cost.currency)})"
    )


def calls_text(calls: Iterable[CallSpend]) -> str:
    """A step's model calls by kind, each with its model, tokens and cost, for people:
    "parameters on gpt-4.1-nano: 320 tok, $0.000041; refine on gpt-4.1-mini: …"."""
    parts = []
    for call in calls:
        times = f" ×{call.calls}" if call.calls > 1 else ""
        parts.append(
            f"{call.kind}{times} on {call.model or 'the model'}: "
            f"{call.tokens:,} tok, {cost_text(call.cost)}"
        )
    return "; ".join(parts)


def models_of(calls: Iterable[CallSpend]) -> list[str]:
    """The models a step's calls used, in the order they first answered."""
    return list(dict.fromkeys(call.model for call in calls if call.model))


def seconds_text(ms: int | float | None) -> str:
    """A duration for people, in one style everywhere: seconds with one decimal ("0.4 s",
    "12.1 s"), minutes and seconds from a minute on ("2 min 5 s")."""
    ms = max(0.0, float(ms or 0))
    if ms < 59_950:  # 59.96 s would read as "60.0 s"
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
