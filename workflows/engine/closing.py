"""What a round has opened and not closed yet, read off its events, and how to close it.

The same fold settles every way a run can end early: the engine closes what it opened when
the model becomes unavailable; the host closes a stopped or crashed run, and a run cut off
by a dead process, from the events it stored. Nothing stays "running" after the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .events import (
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    Event,
    MessageEvent,
    PlanEvent,
    RoundEvent,
    StepEvent,
    TaskEvent,
)

Ending = Literal["failed", "stopped"]


@dataclass
class _Stream:
    round: int
    task: int
    action: int
    text: str
    attempt: str


class OpenWork:
    """Everything a round opened that no later event closed: a started round, tasks that are
    pending or running, a step, a question, an approval, an answer being streamed."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.round: RoundEvent | None = None
        self.tasks: dict[int, TaskEvent] = {}
        self.steps: dict[tuple[int, int], StepEvent] = {}
        self.asks: dict[tuple[int, int], AskEvent] = {}
        self.approvals: dict[tuple[int, int], ApprovalEvent] = {}
        self.streams: dict[str, _Stream] = {}
        for event in events:
            self.add(event)

    def add(self, event: Event) -> None:
        """Take one event into account, in the order the round emitted them."""
        match event:
            case RoundEvent(status="started"):
                self.round = event
            case RoundEvent():
                self.round = None
            case TaskEvent():
                self.tasks[event.task] = event
            case StepEvent(status="started"):
                self.steps[(event.task, event.action)] = event
            case StepEvent():
                self.steps.pop((event.task, event.action), None)
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

    def closing(self, ending: Ending, reason: str) -> list[Event]:
        """The events that close everything still open, innermost first; the round's own
        end last (when it started and did not end)."""
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
        for ask in self.asks.values():
            events.append(ask.model_copy(update={"status": "cancelled"}))
        for approval in self.approvals.values():
            events.append(approval.model_copy(update={"status": "cancelled"}))
        for step in self.steps.values():
            events.append(
                StepEvent(
                    round=step.round,
                    task=step.task,
                    action=step.action,
                    status=ending,
                    step=step.step,
                    method=step.method,
                    reason=reason,
                )
            )
        for task in self.tasks.values():
            if task.status in ("pending", "running", "retry"):
                status = "skipped" if task.status == "pending" else ending
                update = {"status": status, "reason": reason if status == ending else ""}
                events.append(task.model_copy(update=update))
        if self.round is not None:
            events.append(self.round.model_copy(update={"status": ending, "reason": reason}))
        return events
