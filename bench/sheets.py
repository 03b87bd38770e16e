"""Price sheets for the benches: real models' prices from genai-prices' bundled table (read
offline from the installed wheel), and the simple sheet the benches used before.

A sheet also says how its provider caches: OpenAI caches automatically, any prefix from 1,024
tokens in steps of 128, read at the sheet's cached price; Anthropic caches only up to an
explicit breakpoint, from a minimum length per model (1,024 tokens for Claude Sonnet 4.5,
4,096 for Claude Haiku 4.5, Anthropic's prompt-caching page), writes cost 1.25x input (5-minute
entries) and reads 0.1x.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

OPENAI_CACHE_MIN, OPENAI_CACHE_STEP = 1_024, 128
ANTHROPIC_CACHE_MIN = {"claude-sonnet-4-5": 1_024, "claude-haiku-4-5": 4_096}
"""Minimum cacheable prefix per model (Anthropic's docs; Haiku 3.5 and 3 had 2,048)."""


@dataclass(frozen=True)
class Sheet:
    """What a model's tokens cost, per token, and how its provider caches."""

    name: str
    provider: str
    """"openai" (automatic prefix cache) or "anthropic" (explicit breakpoints)."""
    input: float
    cached: float
    output: float
    cache_write: float
    """Price of a token written to the cache (Anthropic; OpenAI writes at the input price)."""
    cache_min: int
    unit: str = "$ per 1k tasks"
    scale: float = 1_000.0
    """What a task's cost is multiplied by for printing (dollars per 1,000 tasks)."""

    def cost(self, *, input: int, cached: int, written: int, output: int) -> float:
        """A call's cost: uncached input, cache reads, cache writes and output."""
        plain = input - cached - written
        return (
            plain * self.input
            + cached * self.cached
            + written * self.cache_write
            + output * self.output
        )

    @property
    def shape(self) -> str:
        """The sheet's ratios to its input price, e.g. "cache 0.25x, output 4x"."""
        parts = [f"cache {self.cached / self.input:g}x"]
        if self.provider == "anthropic":
            parts.append(f"write {self.cache_write / self.input:g}x")
        return ", ".join([*parts, f"output {self.output / self.input:g}x"])


SIMPLE = Sheet(
    "simple", "openai", 1.0, 0.1, 4.0, 1.0, OPENAI_CACHE_MIN, unit="units per task", scale=1.0
)
"""The benches' sheet before real ones: units per token, input 1, cached 0.1, output 4."""


def _per_token(price: Any) -> float | None:
    """A table price per million tokens as a price per token (a tiered one: its base tier,
    which PowerOn's prompts never leave)."""
    if price is None:
        return None
    if not isinstance(price, Decimal | int | float):
        price = getattr(price, "base", None)
        if price is None:
            return None
    return float(price) / 1_000_000


def table_sheet(model: str) -> Sheet:
    """A model's sheet from genai-prices' bundled table."""
    from genai_prices import data_snapshot

    provider, found = data_snapshot.get_snapshot().find_provider_model(model, None, None, None)
    prices = found.prices
    if not hasattr(prices, "input_mtok"):
        raise ValueError(f"{model}: prices that change over time are not supported")
    input, output = _per_token(prices.input_mtok), _per_token(prices.output_mtok)
    if input is None or output is None:
        raise ValueError(f"{model}: genai-prices has no input or output price")
    kind = "anthropic" if provider.id == "anthropic" else "openai"
    cached = _per_token(prices.cache_read_mtok)
    write = _per_token(prices.cache_write_mtok)
    return Sheet(
        name=found.id,
        provider=kind,
        input=input,
        cached=input if cached is None else cached,
        output=output,
        cache_write=input if write is None else write,
        cache_min=ANTHROPIC_CACHE_MIN.get(found.id, 1_024) if kind == "anthropic"
        else OPENAI_CACHE_MIN,
    )  # fmt: skip


def sheet(name: str) -> Sheet:
    """The simple sheet, or a model's from genai-prices."""
    return SIMPLE if name == "simple" else table_sheet(name)


MAIN_SHEETS = ("gpt-4.1-mini", "gpt-5-mini", "claude-haiku-4-5", "claude-sonnet-4-5", "simple")
"""The sheets every report prices: four current models of different shapes, and the old."""
