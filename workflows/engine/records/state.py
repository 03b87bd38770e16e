"""What the host hands the engine for one round: the request, the history, the limits."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from workflows.engine.model.money import Prices

Mode = Literal["react", "actionplan", "reasoning"]
MODES: tuple[str, ...] = get_args(Mode)
"""Every mode, in the order people are offered them."""


class HistoryEntry(BaseModel):
    """One earlier message of the workflow, as the model sees it in the history."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "action", "system"]
    round: int
    task: int = 0
    action: int = 0
    method: str = ""
    """The action's "method.action" (action messages only)."""
    content: str = ""
    """A snippet of the message text."""
    summary: str = ""
    documents_label: str = ""
    documents: list[str] = Field(default_factory=list)
    """docList:/docItem: references of the message's documents."""
    notes: list[str] = Field(default_factory=list)
    """Findings and notes of the action."""
    learnings: list[str] = Field(default_factory=list)
    success: bool | None = None


class ConnectionInfo(BaseModel):
    """A connection the model may name: label and kind, never the secret."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    kind: str


class Budgets(BaseModel):
    """Limits of one round, and optionally of the workflow's day; None means unlimited."""

    model_config = ConfigDict(extra="forbid")

    tokens: int | None = 200_000
    """Token budget of this round (prompt + completion)."""
    day_tokens: int | None = None
    """Token budget of the workflow over 24 hours."""
    day_tokens_used: int = 0
    """Tokens the workflow spent in the 24 hours before this round."""
    day_cost: float | None = None
    """Money the workflow may spend over 24 hours, in the prices' currency (needs prices)."""
    day_cost_used: float = 0.0
    """Money the workflow spent in the 24 hours before this round."""
    seconds: float | None = 600.0
    """Time budget for this round."""


class Policy(BaseModel):
    """Which actions a task may use. Patterns are fnmatch globs: "web.*", "*"."""

    model_config = ConfigDict(extra="forbid")

    allowed: dict[str, list[str]] = Field(default_factory=lambda: {"*": ["*"]})
    """Task type -> allowed patterns; the "*" entry applies to types not listed."""
    denied: dict[str, list[str]] = Field(default_factory=dict)
    """Task type -> denied patterns; the "*" entry applies to every type."""
    approval: list[str] = Field(default_factory=list)
    """Actions that wait for the user's approval before they run."""
    offsite_approval: bool = False
    """Whether an action that would send data to a host the user's request does not name
    waits for approval too (`guards.sends_offsite`)."""
    external: list[str] = Field(default_factory=list)
    """Actions that run on another host (MCP servers' tools): with offsite_approval, a call
    that carries documents waits for approval."""


class Caps(BaseModel):
    """Size limits that keep prompts small."""

    model_config = ConfigDict(extra="forbid")

    observation_chars: int = 2_000
    """An observation as the model sees it, in JSON characters."""
    snippet_chars: int = 280
    prompt_chars: int = 24_000
    """The largest prompt the engine builds; history is cut first."""
    history_chars: int = 6_000
    final_context_chars: int = 8_000
    documents_recent: int = 8
    """Documents of earlier rounds listed by name in prompts (the newest); older ones are
    counted, and references to them still resolve."""
    documents_per_label: int = 8
    """Documents listed under one label; the rest of the list is counted."""
    documents_current_labels: int = 12
    """Labels of this round listed (the newest); a long task's older results are counted,
    and references to them still resolve."""


class RoundState(BaseModel):
    """Everything the engine needs to run one round of a workflow."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = "react"
    round: int = Field(ge=1)
    prompt: str
    language: str = "en"
    max_steps: int = Field(default=5, ge=1)
    max_task_retries: int = Field(default=1, ge=0)
    history: list[HistoryEntry] = Field(default_factory=list)
    """Earlier messages, oldest first (earlier rounds and earlier messages of this round)."""
    connections: list[ConnectionInfo] = Field(default_factory=list)
    budgets: Budgets = Field(default_factory=Budgets)
    prices: Prices | None = None
    """What the model's tokens cost; None when its price is unknown (or no model costs)."""
    small_model: str = ""
    """The small model's label when one answers Stage 2 and the review ("": none)."""
    small_prices: Prices | None = None
    """What the small model's tokens cost; None when its price is unknown."""
    small_schemas: Literal["narrow", "stable", "shared"] | None = None
    """How the calls the small model answers ask for their answer, when its server differs
    from the main model's in kind (a local small model beside a hosted one gets narrow
    schemas, a grammar); None: as every call of the round (`schemas`)."""
    policy: Policy = Field(default_factory=Policy)
    caps: Caps = Field(default_factory=Caps)
    schemas: Literal["narrow", "stable", "shared"] = "narrow"
    """How far each structured call's JSON schema follows the live state. narrow: it also
    enumerates the documents that exist (a local server turns it into a grammar, which keeps
    a small model's references valid); stable: references are checked after the answer, so
    the calls of a task send the same schema and a provider's prompt cache, which counts the
    schema as the start of the prompt, holds across them; shared: no schema at all, one system
    message for every call that plans, chooses or judges (see shared.py), compact answers,
    and the answer to the user as plain text after the JSON."""

    @property
    def prompt_cache(self) -> bool:
        """Whether the provider caches prompt prefixes (a hosted one: stable or shared
        schemas). Its prompts are laid out for the cache and its catalogs are listed whole up
        to a larger size."""
        return self.schemas != "narrow"
