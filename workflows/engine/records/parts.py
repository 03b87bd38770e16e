"""The parts events are made of: the statuses and stop codes they carry, where an event
belongs, and the records nested in them (a planned step, what a step's calls spent, a
reasoning plan's item). The events themselves, and their union, are in `events`."""

from __future__ import annotations

from typing import Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from workflows.engine.model.money import Cost
from workflows.engine.records.schemas import PlanStep

StopCode = Literal[
    "criteria_met",
    "no_improvement",
    "max_steps",
    "token_budget",
    "cost_budget",
    "time_budget",
    "step_failed",
    "plan_complete",
    "model_unavailable",
]
"""Why a task's loop (or the round) stopped."""

TaskStatus = Literal[
    "pending", "running", "success", "retry", "failed", "incomplete", "stopped", "skipped"
]
"""pending → running → success | retry | failed | incomplete (cut short by a limit or a
budget while the agent judged the work unfinished); stopped or skipped when the run ends
first."""

StepStatus = Literal["started", "success", "failed", "rejected", "stopped"]
"""started opens a step; the others close it."""


class Position(TypedDict):
    """Where an event belongs; spread into an event's constructor."""

    round: int
    task: int
    action: int


class PlannedStep(BaseModel):
    """One action of an upfront plan, as people see it."""

    model_config = ConfigDict(extra="forbid")

    action: str
    objective: str = ""


class CallSpend(BaseModel):
    """What a step's model calls of one kind spent, and which model answered them."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    """taskplan, select, parameters, refine, review, … or an action's own kind."""
    model: str = ""
    calls: int = 1
    tokens: int = 0
    """Prompt and completion tokens."""
    promptTokens: int = 0
    """Of those, the prompts' tokens."""
    cachedTokens: int = 0
    """Of the prompts' tokens, those read from a cache: a provider's prompt cache, or the prefix
    a local server reused (the rest it evaluated)."""
    cost: Cost | None = None
    """None when the model's price is unknown."""


class PlanItem(BaseModel):
    """One step of a reasoning plan as people see it, with its sub-steps (the model writes
    it as a `PlanStep`, in seed 002's names)."""

    model_config = ConfigDict(extra="forbid")

    description: str
    status: Literal["Pending", "Done", "Verification Needed"] = "Pending"
    result: str | None = None
    mark: str | None = None
    """Why the step needs verification."""
    subSteps: list[PlanItem] = Field(default_factory=list)

    @classmethod
    def of(cls, step: PlanStep) -> PlanItem:
        """A plan step the model wrote, as the event carries it."""
        return cls(
            description=step.description,
            status=step.status,
            result=step.result,
            mark=step.mark,
            subSteps=[cls.of(sub) for sub in step.sub_steps or []],
        )
