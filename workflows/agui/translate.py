"""A round's events as AG-UI events: what one AG-UI run of PowerOn streams.

`Translator.take` reads the round's events in seq order (stored or live, the `Feed`'s) and
answers the AG-UI events each one makes, keeping what an AG-UI client has open (a phase of a
step, a tool call waiting for its result, the answer being written) and the shared state.
A run ends at the round's final status or at a question the round waits on (an approval,
the step-limit question): `outcome` is then set and `closing()` closes what is open and
ends the run (RUN_FINISHED with the interrupt, or success or cancelled; RUN_ERROR for a
failed round). Events of the round before the run (a resumed or reconnected run) are read
the same way so the state and what is open are right, and `opening()` brings a client
there: the state as a snapshot, then the phase and the answer that are open.

PowerOn's events, and the AG-UI events they make:
    step started, plan, act, observe, refine   STEP_STARTED / STEP_FINISHED of the phases
                                               `plan`, `act`, `observe`, `refine`
    act (Stage 2's parameters), observe        TOOL_CALL_START / ARGS / END, TOOL_CALL_RESULT
    delta and message of the answer            TEXT_MESSAGE_START / CONTENT / END
    thought (Reasoning mode)                   REASONING_START ... REASONING_END
    taskplan, task, review, step, document,    STATE_DELTA (JSON Patch)
      usage, run, questions answered
    approval or ask waiting                    RUN_FINISHED, outcome interrupt
    run completed / stopped / failed           RUN_FINISHED success / cancelled, RUN_ERROR
    status, error                              CUSTOM poweron.status, poweron.error
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, cast

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from workflows.api.compat.answer import AnswerText, answer_key
from workflows.engine.records.events import (
    ActEvent,
    ActionPlanEvent,
    ApprovalEvent,
    AskEvent,
    DeltaEvent,
    DocumentEvent,
    ErrorEvent,
    MessageEvent,
    ObserveEvent,
    PlanEvent,
    RefineEvent,
    ReviewEvent,
    RoundEvent,
    StatusEvent,
    StepEvent,
    TaskEvent,
    TaskPlanEvent,
    ThoughtEvent,
    UsageEvent,
)
from workflows.events.contract import Envelope, RunEvent

from . import state as shared
from .interrupts import approval_interrupt, ask_interrupt


def compact(value: Any) -> str:
    """JSON text, as a tool call's arguments and results carry it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Phase:
    """A phase of a step open for the client."""

    name: str
    task: int
    step: int

    def meta(self) -> dict[str, Any]:
        return {"poweron": {"task": self.task, "step": self.step}}


@dataclass
class Spent:
    """What one model's calls spent in this run."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0


@dataclass
class Translator:
    """One AG-UI run of a round: its events from the round's (see the module)."""

    workflow: int
    round: int
    page: str
    thread_id: str
    run_id: str
    run_after: int
    """The seq after which the run's own events begin: earlier ones only bring the state."""
    state: dict[str, Any] = field(init=False)
    phase: Phase | None = None
    tool_call: str | None = None
    """The action's tool call waiting for its result."""
    answer: AnswerText = field(init=False)
    message: str | None = None
    """The id of the text message open for the client."""
    spent: dict[str, Spent] = field(default_factory=dict)
    outcome: str | None = None
    """Once the run ended: "interrupt", "completed", "stopped" or "failed"."""
    interrupts: list[Interrupt] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state = shared.initial_state(workflow=self.workflow, round=self.round, page=self.page)
        self.answer = AnswerText(answer_key(self.round))

    @property
    def answer_id(self) -> str:
        return f"poweron-{self.workflow}-{self.round}-answer"

    def take(self, envelope: Envelope) -> list[BaseEvent]:
        """The AG-UI events of one event of the workflow (none for another round's)."""
        event = envelope.event
        if event.round != self.round or self.outcome is not None:
            return []
        seq = envelope.seq
        own = seq is None or seq > self.run_after
        before = shared.before_change(self.state)
        out = self._events(event, seq, own)
        if ops := shared.diff(before, self.state):
            out.append(StateDeltaEvent(delta=cast(Any, ops)))  # JSON Patch, validated
        return out

    def _events(self, event: Any, seq: int | None, own: bool) -> list[BaseEvent]:
        state = self.state
        match event:
            case RoundEvent(status="started"):
                state["status"] = "running"
            case RunEvent():
                state["status"], state["reason"] = event.status, event.reason
                if event.final and own:
                    self.outcome = event.status
            case TaskPlanEvent():
                shared.plan_tasks(state, event.tasks)
            case TaskEvent():
                shared.update_task(state, event)
            case ActionPlanEvent():
                actions = [step.model_dump(mode="json") for step in event.actions]
                shared.change_task(state, event.task, actions=actions)
            case ReviewEvent():
                review = {"status": event.status, "reason": event.reason}
                shared.change_task(state, event.task, review=review)
            case StepEvent(status="started"):
                shared.update_step(state, event)
                return self._enter("plan", event.task, event.step)
            case StepEvent():
                shared.update_step(state, event)
                ended = {"success": event.status == "success", "status": event.status,
                         "reason": event.reason}  # fmt: skip
                return self._result(ended) + self._leave()
            case PlanEvent():
                meta = {"action": event.selection.action}
                return self._leave(meta) + self._enter("act", event.task, event.step)
            case ActEvent():
                return self._call(event, seq)
            case ObserveEvent():
                task, step = self._where(event.task)
                return (
                    self._enter("observe", task, step)
                    + self._result(event.observation.model_dump(mode="json"))
                    + self._enter("refine", task, step)
                )
            case RefineEvent():
                task, step = self._where(event.task)
                opened = [] if self._is("refine") else self._enter("refine", task, step)
                return opened + self._leave({"decision": event.decision, "reason": event.reason})
            case ApprovalEvent(status="waiting"):
                self._asked(approval_interrupt(self.workflow, seq or 0, event, self.tool_call), own)
            case AskEvent(status="waiting"):
                self._asked(ask_interrupt(self.workflow, seq or 0, event), own)
            case ApprovalEvent() | AskEvent():
                state["question"] = None
                state["status"] = "running" if state["status"] == "waiting" else state["status"]
            case ThoughtEvent():
                return self._thought(event, seq)
            case DeltaEvent(key=key) if key == self.answer.key:
                return self._text(self.answer.delta(event))
            case MessageEvent(role="assistant", key=key) if key == self.answer.key:
                return self._text(self.answer.show(event.content)) + self._end_text()
            case DocumentEvent():
                document = event.document
                state["documents"].append(
                    {"id": document.id, "name": document.name, "mime": document.mime,
                     "label": document.label, "size": document.size}
                )  # fmt: skip
            case UsageEvent():
                shared.add_usage(state, event)
                if own:
                    spent = self.spent.setdefault(event.model, Spent())
                    spent.prompt += event.promptTokens
                    spent.completion += event.completionTokens
                    spent.cached += event.cachedTokens
            case StatusEvent() | ErrorEvent():
                value = event.model_dump(mode="json", exclude={"type"})
                return [CustomEvent(name=f"poweron.{event.type}", value=value)]
        return []

    def _asked(self, interrupt: Interrupt, own: bool) -> None:
        """A question the round waits on: in the state, and the run's end when it is the
        run's own."""
        self.state["question"] = interrupt.model_dump(mode="json", by_alias=True)
        self.state["status"] = "waiting"
        if own:
            self.outcome, self.interrupts = "interrupt", [interrupt]

    def _is(self, name: str) -> bool:
        return self.phase is not None and self.phase.name == name

    def _where(self, task: int) -> tuple[int, int]:
        """The task and step of the phase open (for events that name no step)."""
        if self.phase is not None:
            return self.phase.task, self.phase.step
        return task, 0

    def _enter(self, name: str, task: int, step: int) -> list[BaseEvent]:
        """Close the phase open, open `name`."""
        closed = self._leave()
        self.phase = Phase(name, task, step)
        return [*closed, StepStartedEvent(step_name=name, metadata=self.phase.meta())]

    def _leave(self, detail: dict[str, Any] | None = None) -> list[BaseEvent]:
        """Close the phase open (with what it decided)."""
        if self.phase is None:
            return []
        meta = self.phase.meta()
        meta["poweron"].update(detail or {})
        finished = StepFinishedEvent(step_name=self.phase.name, metadata=meta)
        self.phase = None
        return [finished]

    def _call(self, event: ActEvent, seq: int | None) -> list[BaseEvent]:
        """The action as a tool call: its name, Stage 2's parameters, its end."""
        task, step = self._where(event.task)
        opened = [] if self._is("act") else self._enter("act", task, step)
        call = f"poweron-{self.workflow}-{seq}"
        self.tool_call = call
        return [
            *opened,
            ToolCallStartEvent(tool_call_id=call, tool_call_name=event.method),
            ToolCallArgsEvent(tool_call_id=call, delta=compact(event.parameters)),
            ToolCallEndEvent(tool_call_id=call),
        ]

    def _result(self, value: dict[str, Any]) -> list[BaseEvent]:
        """The result of the tool call waiting for one."""
        if self.tool_call is None:
            return []
        call, self.tool_call = self.tool_call, None
        return [ToolCallResultEvent(message_id=f"{call}-result", tool_call_id=call,
                                    content=compact(value), role="tool")]  # fmt: skip

    def _text(self, piece: str) -> list[BaseEvent]:
        """A piece of the answer (opening its message first)."""
        out: list[BaseEvent] = []
        if self.message is None:
            self.message = self.answer_id
            out.append(TextMessageStartEvent(message_id=self.message, role="assistant"))
        if piece:
            out.append(TextMessageContentEvent(message_id=self.message, delta=piece))
        return out

    def _end_text(self) -> list[BaseEvent]:
        if self.message is None:
            return []
        ended, self.message = TextMessageEndEvent(message_id=self.message), None
        return [ended]

    def _thought(self, event: ThoughtEvent, seq: int | None) -> list[BaseEvent]:
        thought = f"poweron-{self.workflow}-{seq}-thought"
        return [
            ReasoningStartEvent(message_id=thought),
            ReasoningMessageStartEvent(message_id=thought, role="reasoning"),
            ReasoningMessageContentEvent(message_id=thought, delta=event.thinking),
            ReasoningMessageEndEvent(message_id=thought),
            ReasoningEndEvent(message_id=thought),
        ]

    def opening(self) -> list[BaseEvent]:
        """What brings a client to where the round is: the state, the phase and the answer
        open (after RUN_STARTED)."""
        out: list[BaseEvent] = [StateSnapshotEvent(snapshot=copy.deepcopy(self.state))]
        if self.phase is not None:
            out.append(StepStartedEvent(step_name=self.phase.name, metadata=self.phase.meta()))
        if self.message is not None:
            out.append(TextMessageStartEvent(message_id=self.message, role="assistant"))
            if self.answer.text:
                out.append(TextMessageContentEvent(message_id=self.message, delta=self.answer.text))
        return out

    def usage(self) -> list[TokenUsage] | None:
        """This run's model calls, by model."""
        return [
            TokenUsage(model=model or None, input_tokens=s.prompt, output_tokens=s.completion,
                       total_tokens=s.prompt + s.completion, cached_input_tokens=s.cached)
            for model, s in sorted(self.spent.items())
        ] or None  # fmt: skip

    def closing(self, *, gone: str = "") -> list[BaseEvent]:
        """Close what is open and end the run by its outcome (`gone`: why the round's events
        ended without one, e.g. the workflow was deleted)."""
        out = self._end_text()
        reason: str = gone or str(self.state["reason"])
        if self.outcome != "interrupt":
            out += self._result({"success": False, "reason": reason or self.outcome})
        out += self._leave()
        result = {
            "workflow": self.workflow,
            "round": self.round,
            "status": self.outcome or "failed",
            "reason": reason,
            "page": self.page,
        }
        if gone or self.outcome == "failed":
            message = reason or "The round failed."
            return [*out, RunErrorEvent(message=message, code="failed", usage=self.usage())]
        outcome: Any = None
        if self.outcome == "interrupt":
            outcome = RunFinishedInterruptOutcome(interrupts=self.interrupts)
        elif self.outcome == "stopped":
            outcome = RunFinishedCancelledOutcome()
        finished = RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=outcome,
            usage=self.usage(),
        )  # fmt: skip
        return [*out, finished]
