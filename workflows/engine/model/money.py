"""What model calls cost in money: the prices the host hands the round, and what they come to.

The host resolves the prices (a price table, or the deployment's own); the engine only
multiplies, so a round's budget in money and its events need no lookup of their own.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PER_TOKENS = 1_000_000
"""Prices are per million tokens."""
PLACES = 9
"""Amounts are kept to a billionth of the currency unit (a sum of floats drifts below it)."""


class Prices(BaseModel):
    """What a model's tokens cost, per million, in one currency."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    currency: str = "USD"
    input: float = Field(ge=0)
    """Prompt tokens not read from the provider's cache."""
    cachedInput: float = Field(ge=0)
    """Prompt tokens the provider read from its prompt cache (usually cheaper)."""
    output: float = Field(ge=0)
    """Completion tokens."""
    source: str = ""
    """Where the prices come from, for people (e.g. "genai-prices: OpenAI gpt-4o-mini")."""

    def cost(self, *, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> Cost:
        """What one model call cost: its cached prompt tokens at the cached price."""
        cached = min(cached_tokens, prompt_tokens)
        return Cost.of(
            self.currency,
            input=(prompt_tokens - cached) * self.input / PER_TOKENS,
            cachedInput=cached * self.cachedInput / PER_TOKENS,
            output=completion_tokens * self.output / PER_TOKENS,
        )


class Cost(BaseModel):
    """Money spent by model calls, with the cached share of the input apart."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    currency: str
    input: float = 0.0
    """For prompt tokens not read from the provider's cache."""
    cachedInput: float = 0.0
    """For prompt tokens read from the provider's cache."""
    output: float = 0.0
    """For completion tokens."""
    total: float = 0.0

    @classmethod
    def of(cls, currency: str, *, input: float, cachedInput: float, output: float) -> Cost:
        """A cost from its parts (rounded; the total is their sum)."""
        parts = [round(part, PLACES) for part in (input, cachedInput, output)]
        return cls(
            currency=currency,
            input=parts[0],
            cachedInput=parts[1],
            output=parts[2],
            total=round(sum(parts), PLACES),
        )

    @classmethod
    def zero(cls, currency: str) -> Cost:
        """Nothing spent yet."""
        return cls(currency=currency)

    def __add__(self, other: Cost) -> Cost:
        return Cost.of(
            self.currency,
            input=self.input + other.input,
            cachedInput=self.cachedInput + other.cachedInput,
            output=self.output + other.output,
        )

    def __sub__(self, other: Cost) -> Cost:
        return Cost.of(
            self.currency,
            input=self.input - other.input,
            cachedInput=self.cachedInput - other.cachedInput,
            output=self.output - other.output,
        )
