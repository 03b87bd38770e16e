"""What every mode shares: the round's context, task records, and the model call with retry."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .contracts import (
    LLM,
    DocumentStore,
    InvalidModelOutput,
    Message,
    T,
    ToolExecutor,
    Usage,
    untrusted,
)
from .controls import Controls
from .events import ErrorEvent, Event, StatusEvent, UsageEvent
from .guards import Budget
from .prompts import correction
from .schemas import Observation, TaskItem
from .state import HistoryEntry, RoundState

V = TypeVar("V")
R = TypeVar("R")


@dataclass
class Out(Generic[V]):
    """Where an event-yielding step leaves its result (None when it failed)."""

    value: V | None = None


class Rejected(ValueError):
    """Model output that parsed but breaks a rule (unknown action, bad reference, ...)."""

    def __init__(self, message: str, *, kind: str = "rejected") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class StepRecord:
    """One action of a task, as later prompts see it."""

    action: int
    name: str
    objective: str
    observation: Observation
    summary: str

    def line(self) -> str:
        """`a2 web.search (success): summary`."""
        status = "success" if self.observation.success else "failed"
        return f"a{self.action} {self.name} ({status}): {self.summary}"


@dataclass
class TaskRun:
    """A task as it runs: its steps, learnings and why it stopped."""

    number: int
    item: TaskItem
    attempt: int = 1
    actions: int = 0
    steps: list[StepRecord] = field(default_factory=list)
    stop_code: str = ""
    stop_reason: str = ""
    status: str = "pending"

    def next_action(self) -> int:
        """The next action number; numbering goes on across retries so labels never clash."""
        self.actions += 1
        return self.actions

    def criteria(self) -> str:
        """The success criteria as one line."""
        return "; ".join(self.item.successCriteria) or "(none stated)"

    def steps_text(self, *, latest_observation: bool = True) -> str:
        """One line per step, fenced (summaries quote documents and the web); the latest
        observation in full (fenced too)."""
        from .prompts import render_observation

        if not self.steps:
            return "(none yet)"
        text = untrusted("earlier steps", "\n".join(step.line() for step in self.steps))
        if latest_observation:
            text += "\nLatest observation: " + render_observation(self.steps[-1].observation)
        return text


class Run:
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
        self.learnings: list[str] = []
        self.entries: list[HistoryEntry] = []
        """Messages this round added, oldest first."""
        self.tasks: list[TaskRun] = []
        self.outcome: tuple[str, str] = ("completed", "")
        """The round's final status and reason, set by the mode that ran it."""

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

    def status(self, code: str, reason: str, *, task: int = 0, action: int = 0) -> StatusEvent:
        """A status event at this round's position."""
        return StatusEvent(round=self.round, task=task, action=action, code=code, reason=reason)  # type: ignore[arg-type]

    def usage(self, usage: Usage, *, task: int = 0, action: int = 0) -> UsageEvent:
        """Count a call's tokens against the budget and describe it as an event."""
        self.budget.spend(usage.prompt_tokens + usage.completion_tokens)
        return UsageEvent(
            round=self.round,
            task=task,
            action=action,
            kind=usage.kind,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            latency_ms=usage.latency_ms,
            model=self.llm.label,
        )


async def ask(
    run: Run,
    messages: Sequence[Message],
    *,
    output: type[T],
    kind: str,
    out: Out[Any],
    check: Callable[[T], Any] | None = None,
    task: int = 0,
    action: int = 0,
) -> AsyncIterator[Event]:
    """One structured model call with exactly one corrective retry.

    `check` may transform the value or raise Rejected/ValueError; the error is fed back to
    the model once. After a second failure `out.value` stays None and the caller fails the
    step visibly. ModelUnavailable propagates.
    """
    prompt = list(messages)
    for attempt in (1, 2):
        raw, kind_of_error = "", "validation"
        try:
            completion = await run.llm.complete(prompt, output=output, kind=kind)
        except InvalidModelOutput as error:
            if error.usage is not None:
                yield run.usage(error.usage, task=task, action=action)
            message, raw = str(error), error.raw
        else:
            yield run.usage(completion.usage, task=task, action=action)
            raw = completion.value.model_dump_json(by_alias=True)
            try:
                out.value = check(completion.value) if check else completion.value
                return
            except Rejected as error:
                message, kind_of_error = str(error), error.kind
            except ValueError as error:
                message = str(error)
        yield ErrorEvent(
            round=run.round,
            task=task,
            action=action,
            kind=kind_of_error,  # type: ignore[arg-type]
            message=f"{kind}: {message[:1_500]}",
            retrying=attempt == 1,
        )
        prompt = [*messages, {"role": "assistant", "content": raw[:4_000]}, correction(message)]
