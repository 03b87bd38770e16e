"""What every mode shares: the round's context and its steps (the task and step records are in
`tasks`, the model call with its retry in `calls`)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from workflows.engine.loop.controls import Controls
from workflows.engine.loop.guards import Budget
from workflows.engine.loop.tasks import BUDGET_CODES as BUDGET_CODES
from workflows.engine.loop.tasks import CUT_SHORT_CODES as CUT_SHORT_CODES
from workflows.engine.loop.tasks import MODEL_STOP_CODES as MODEL_STOP_CODES
from workflows.engine.loop.tasks import STEPS_SHOWN as STEPS_SHOWN
from workflows.engine.loop.tasks import StepTrace as StepTrace
from workflows.engine.loop.tasks import TaskState as TaskState
from workflows.engine.model.money import Cost, Prices
from workflows.engine.model.staged import SMALL_KINDS
from workflows.engine.records.events import StatusEvent, StepEvent, TaskEvent, UsageEvent
from workflows.engine.records.parts import CallSpend, Position, TaskStatus
from workflows.engine.records.protocols import LLM, DocumentStore, ToolExecutor, Usage
from workflows.engine.records.state import HistoryEntry, RoundState

V = TypeVar("V")
R = TypeVar("R")


@dataclass
class Out(Generic[V]):
    """Where an event-yielding step leaves its result (None when it failed)."""

    value: V | None = None
    error: str = ""
    """Why there is no value, in words for people (a model call's last error)."""


class Rejected(ValueError):
    """Model output that parsed but breaks a rule (unknown action, bad reference, ...)."""

    def __init__(self, message: str, *, kind: str = "rejected", told: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.told = told or message
        """What is wrong in words for people (the message, for the model, may name paths)."""


@dataclass
class Step:
    """One step of a task as it runs: where its events belong, and its telemetry."""

    round: int
    task: TaskState
    action: int
    """The action number in the task (numbering goes on across retries)."""
    number: int
    """The step number shown to people."""
    started: float
    tokens_before: int
    cached_before: int = 0
    cost_before: Cost | None = None
    waited_before: float = 0.0
    """The round's waiting time (for the user's answers) when the step began."""
    calls_before: int = 0
    """How many model calls the round had made when the step began."""
    status: str = "started"
    """Set by the step's action record: success, failed or rejected."""
    method: str = ""

    def position(self) -> Position:
        """The keywords that place an event in this step."""
        return Position(round=self.round, task=self.task.number, action=self.action)


class RoundContext:
    """One round: the host's objects, the budget, and what the round has learned so far."""

    def __init__(
        self,
        state: RoundState,
        *,
        llm: LLM,
        tools: ToolExecutor,
        store: DocumentStore,
        controls: Controls,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self.llm = llm
        self.tools = tools
        self.store = store
        self.controls = controls
        self.clock = clock
        self.budget = Budget(state.budgets, clock)
        if state.prices is not None:
            self.budget.cost = Cost.zero(state.prices.currency)
        self.learnings: list[str] = []
        self.entries: list[HistoryEntry] = []
        """Messages this round added, oldest first."""
        self.tasks: list[TaskState] = []
        self.waited = 0.0
        """Seconds spent waiting for the user's answers: they count against the time budget,
        not in a step's duration."""
        self.cached_tokens = 0
        """Of the prompt tokens spent, those the provider read from its prompt cache."""
        self.outcome: tuple[str, str] = ("completed", "")
        """The round's final status and reason, set by the mode that ran it."""
        self.streamed: dict[str, tuple[str, str]] = {}
        """Message key -> (attempt, text) of what a structured call streamed of it."""
        self.calls: list[UsageEvent] = []
        """Every model call of the round, in order (what a step's telemetry sums)."""

    @property
    def round(self) -> int:
        """The round number."""
        return self.state.round

    def history(self, *, exclude_task: int | None = None) -> list[HistoryEntry]:
        """Earlier messages plus this round's, oldest first (optionally without one task's)."""
        own = [e for e in self.entries if exclude_task is None or e.task != exclude_task]
        return [*self.state.history, *own]

    def add_learnings(self, learnings: Sequence[str]) -> None:
        """Remember learnings for later selections (newest kept, no duplicates)."""
        for text in learnings:
            if text and text not in self.learnings:
                self.learnings.append(text)
        del self.learnings[:-10]

    def task_event(self, task: TaskState, status: TaskStatus, reason: str = "") -> TaskEvent:
        """A task status change (remembered on the task)."""
        task.status = status
        return TaskEvent(
            round=self.round,
            task=task.number,
            status=status,
            objective=task.item.objective,
            successCriteria=task.item.successCriteria,
            reason=reason,
            attempt=task.attempt,
        )

    def begin_step(
        self, task: TaskState, number: int, *, method: str = ""
    ) -> tuple[Step, StepEvent]:
        """Open the next step of a task, before its first model call (`method` when the
        action is already known, as in Actionplan)."""
        action = task.next_action()
        step = Step(self.round, task, action, number, self.clock(), self.budget.tokens)
        step.cached_before, step.cost_before = self.cached_tokens, self.budget.cost
        step.method, step.waited_before = method, self.waited
        step.calls_before = len(self.calls)
        return step, StepEvent(**step.position(), status="started", step=number, method=method)

    def end_step(self, step: Step, *, reason: str = "") -> StepEvent:
        """Close a step with its status (from its action record) and its telemetry."""
        return StepEvent(
            **step.position(),
            # Ignored for mypy below: a closed step's status is a final one.
            status="failed" if step.status == "started" else step.status,  # type: ignore[arg-type]
            step=step.number,
            method=step.method,
            reason=reason,
            durationMs=int((self.clock() - step.started - self.waited + step.waited_before) * 1000),
            tokens=self.budget.tokens - step.tokens_before,
            promptTokens=sum(call.promptTokens for call in self.calls[step.calls_before :]),
            cachedTokens=self.cached_tokens - step.cached_before,
            cost=self.spent_since(step.cost_before, step.calls_before),
            model=self.llm.label,
            calls=spends(self.calls[step.calls_before :]),
        )

    def spent_since(self, before: Cost | None, calls_before: int = 0) -> Cost | None:
        """What the round's model calls cost since `before` (None: a price is unknown)."""
        now = self.budget.cost
        if any(call.cost is None for call in self.calls[calls_before:]):
            return None  # a call of a model without a price: the sum is not known
        return None if now is None or before is None else now - before

    def round_cost(self) -> Cost | None:
        """What the round's model calls cost (None when a call's price is unknown)."""
        return None if any(call.cost is None for call in self.calls) else self.budget.cost

    def layout(self, kind: str) -> str:
        """How a call of this kind asks for its answer (narrow, stable or shared): as the
        server that answers it wants (the small model's may be a local one)."""
        state = self.state
        if state.small_model and state.small_schemas and kind in SMALL_KINDS:
            return state.small_schemas
        return state.schemas

    def prices_of(self, model: str) -> Prices | None:
        """The prices of the model that made a call: the small model's own, else the main's."""
        state = self.state
        if state.small_model and model == state.small_model:
            return state.small_prices
        return state.prices

    async def wait_for_user(self, answer: Awaitable[R]) -> R:
        """Await the user's answer, counting the wait against the budget but in no step."""
        before = self.clock()
        try:
            return await answer
        finally:
            self.waited += self.clock() - before

    def budget_stop(self, task: TaskState, *, action: int = 0) -> StatusEvent | None:
        """When a budget is spent: the task stops for it, and the status that says so."""
        if (exhausted := self.budget.exhausted()) is None:
            return None
        task.stop_code, task.stop_reason = exhausted
        return self.status(*exhausted, task=task.number, action=action)

    def status(self, code: str, reason: str, *, task: int = 0, action: int = 0) -> StatusEvent:
        """A status event at this round's position."""
        # Ignored for mypy below: the engine's stop codes are StatusEvent's.
        return StatusEvent(round=self.round, task=task, action=action, code=code, reason=reason)  # type: ignore[arg-type]

    def usage(self, usage: Usage, *, task: int = 0, action: int = 0) -> UsageEvent:
        """Count a call's tokens and cost (by the prices of the model that made it) against
        the budget and describe it as an event."""
        model = usage.model or self.llm.label
        prices = self.prices_of(model)
        cost = None
        if prices is not None:
            cost = prices.cost(
                prompt_tokens=usage.prompt_tokens,
                cached_tokens=usage.cached_tokens,
                completion_tokens=usage.completion_tokens,
            )
        self.budget.spend(usage.prompt_tokens + usage.completion_tokens, cost)
        self.cached_tokens += usage.cached_tokens
        event = UsageEvent(
            round=self.round,
            task=task,
            action=action,
            kind=usage.kind,
            promptTokens=usage.prompt_tokens,
            completionTokens=usage.completion_tokens,
            cachedTokens=usage.cached_tokens,
            latencyMs=usage.latency_ms,
            model=model,
            cost=cost,
        )
        self.calls.append(event)
        return event


def spends(calls: Sequence[UsageEvent]) -> list[CallSpend]:
    """Model calls summed by kind and model, in the order they first came."""
    summed: dict[tuple[str, str], CallSpend] = {}
    for call in calls:
        tokens = call.promptTokens + call.completionTokens
        found = summed.get((call.kind, call.model))
        if found is None:
            summed[call.kind, call.model] = CallSpend(
                kind=call.kind,
                model=call.model,
                tokens=tokens,
                promptTokens=call.promptTokens,
                cachedTokens=call.cachedTokens,
                cost=call.cost,
            )
            continue
        cost = None if found.cost is None or call.cost is None else found.cost + call.cost
        summed[call.kind, call.model] = found.model_copy(
            update={
                "calls": found.calls + 1,
                "tokens": found.tokens + tokens,
                "promptTokens": found.promptTokens + call.promptTokens,
                "cachedTokens": found.cachedTokens + call.cachedTokens,
                "cost": cost,
            }
        )
    return list(summed.values())
