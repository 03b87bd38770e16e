"""What a round has opened and not closed yet, read off its events, and how to close it.

The same fold settles every way a run can end early: the engine closes what it opened when
the model becomes unavailable; the host closes a stopped or crashed run, and a run cut off
by a dead process, from the events it stored. Nothing stays "running" after the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from workflows.engine.loop.core import spends
from workflows.engine.model.money import Cost
from workflows.engine.records.events import (
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    Event,
    MessageEvent,
    PlanEvent,
    RoundEvent,
    StepEvent,
    TaskEvent,
    UsageEvent,
)

Ending = Literal["failed", "stopped"]


@dataclass
class _Stream:
    round: int
    task: int
    action: int
    text: str
    attempt: str


@dataclass
class _Spend:
    """What an open round or step has spent so far, and since when it runs."""

    since: datetime | None = None
    tokens: int = 0
    cached: int = 0
    cost: Cost | None = None
    priced: bool = True
    """Whether every call had a price (else the cost is unknown, as the engine says it)."""
    calls: list[UsageEvent] = field(default_factory=list)

    def add(self, usage: UsageEvent) -> None:
        self.calls.append(usage)
        self.tokens += usage.promptTokens + usage.completionTokens
        self.cached += usage.cachedTokens
        if usage.cost is None or (self.cost and self.cost.currency != usage.cost.currency):
            self.priced = False
        else:
            self.cost = usage.cost if self.cost is None else self.cost + usage.cost

    def figures(self, now: datetime | None) -> dict[str, Any]:
        """The telemetry fields of the event that closes it."""
        since = self.since
        elapsed = int((now - since).total_seconds() * 1000) if now and since else 0
        return {
            "tokens": self.tokens,
            "cachedTokens": self.cached,
            "cost": self.cost if self.priced else None,
            "durationMs": max(0, elapsed),
        }


class OpenWork:
    """Everything a round opened that no later event closed: a started round, tasks that are
    pending or running, a step, a question, an approval, an answer being streamed; and what
    the open round and steps have spent (their usage events), so that closing them keeps it."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.round: RoundEvent | None = None
        self.tasks: dict[int, TaskEvent] = {}
        self.steps: dict[tuple[int, int], StepEvent] = {}
        self.asks: dict[tuple[int, int], AskEvent] = {}
        self.approvals: dict[tuple[int, int], ApprovalEvent] = {}
        self.streams: dict[str, _Stream] = {}
        self.spent = _Spend()
        self.step_spent: dict[tuple[int, int], _Spend] = {}
        for event in events:
            self.add(event)

    def add(self, event: Event, at: datetime | None = None) -> None:
        """Take one event into account, in the order the round emitted them (`at`: when it
        was stored, which times what is still open)."""
        match event:
            case RoundEvent(status="started"):
                self.round = event
                self.spent = _Spend(since=at)
            case RoundEvent():
                self.round = None
            case UsageEvent():
                self.spent.add(event)
                if (step := self.step_spent.get((event.task, event.action))) is not None:
                    step.add(event)
            case TaskEvent():
                self.tasks[event.task] = event
            case StepEvent(status="started"):
                self.steps[(event.task, event.action)] = event
                self.step_spent[(event.task, event.action)] = _Spend(since=at)
            case StepEvent():
                self.steps.pop((event.task, event.action), None)
                self.step_spent.pop((event.task, event.action), None)
            case PlanEvent() if (event.task, event.action) in self.steps:
                opened = self.steps[(event.task, event.action)]
                self.steps[(event.task, event.action)] = opened.model_copy(
                    update={"method": event.selection.action}
                )
            case AskEvent(status="waiting"):
                self.asks[(event.task, event.stepsDone)] = event
            case AskEvent():
                self.asks.pop((event.task, event.stepsDone), None)
            case ApprovalEvent(status="waiting"):
                self.approvals[(event.task, event.action)] = event
            case ApprovalEvent():
                self.approvals.pop((event.task, event.action), None)
            case DeltaEvent():
                stream = self.streams.get(event.key)
                if stream is None or stream.attempt != event.attempt:  # a new attempt restarts
                    stream = _Stream(event.round, event.task, event.action, "", event.attempt)
                    self.streams[event.key] = stream
                if event.offset == len(stream.text):
                    stream.text += event.text
            case MessageEvent():
                self.streams.pop(event.key, None)

    def closing(self, ending: Ending, reason: str, now: datetime | None = None) -> list[Event]:
        """The events that close everything still open, innermost first; the round's own
        end last (when it started and did not end). A closed step or round keeps what it
        spent, and how long it ran when `now` and its start are known."""
        events: list[Event] = []
        for key, stream in self.streams.items():  # an answer cut off keeps what was written
            events.append(
                MessageEvent(
                    round=stream.round,
                    task=stream.task,
                    action=stream.action,
                    key=key,
                    role="assistant",
                    content=stream.text,
                    success=False,
                    status=ending,
                )
            )
        # Not "no answer came": the run ended under the question.
        ended = f"the run {ending} before it was answered"
        for ask in self.asks.values():
            events.append(ask.model_copy(update={"status": "cancelled", "reason": ended}))
        for approval in self.approvals.values():
            events.append(approval.model_copy(update={"status": "cancelled", "reason": ended}))
        for place, step in self.steps.items():
            spent = self.step_spent.get(place, _Spend())
            events.append(
                StepEvent(
                    round=step.round,
                    task=step.task,
                    action=step.action,
                    status=ending,
                    step=step.step,
                    method=step.method,
                    reason=reason,
                    # The round's model, as the engine names it on the steps it closes (the
                    # demo model's steps say "demo", not "0 tok · price unknown").
                    model=step.model or (self.round.model if self.round else ""),
                    calls=spends(spent.calls),
                    **spent.figures(now),
                )
            )
        for task in self.tasks.values():
            if task.status in ("pending", "running", "retry"):
                status = "skipped" if task.status == "pending" else ending
                update = {"status": status, "reason": reason if status == ending else ""}
                events.append(task.model_copy(update=update))
        if self.round is not None:
            update = {"status": ending, "reason": reason, **self.spent.figures(now)}
            events.append(self.round.model_copy(update=update))
        return events
