"""Everything the loop emits, typed: the streaming contract between the engine and the host.

Each event is flat: `type`, the `round`/`task`/`action` it belongs to, then its own fields
(the host stores all but the first four as the event's payload). `Event` is their union.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from workflows.engine.model.money import Cost
from workflows.engine.records.parts import (
    CallSpend,
    PlanItem,
    PlannedStep,
    StepStatus,
    StopCode,
    TaskStatus,
)
from workflows.engine.records.protocols import DocumentRef
from workflows.engine.records.schemas import ActionSelection, Observation, TaskItem


class BaseEvent(BaseModel):
    """Fields every event has."""

    model_config = ConfigDict(extra="forbid")

    round: int
    task: int = 0
    action: int = 0


class RoundEvent(BaseEvent):
    """A round started or ended."""

    type: Literal["round"] = "round"
    status: Literal["started", "completed", "failed", "stopped"]
    mode: str = ""
    model: str = ""
    """The model's label (the demo model's label for the offline demo)."""
    reason: str = ""
    tokens: int = 0
    """Tokens spent by the round so far."""
    cachedTokens: int = 0
    """Of those, prompt tokens the provider read from its prompt cache."""
    cost: Cost | None = None
    """What the round's model calls cost so far; None when the model's price is unknown or
    the demo model answered."""
    durationMs: int = 0


class TaskPlanEvent(BaseEvent):
    """The round split into tasks."""

    type: Literal["taskplan"] = "taskplan"
    overview: str = ""
    tasks: list[TaskItem]


class TaskEvent(BaseEvent):
    """A task changed status."""

    type: Literal["task"] = "task"
    status: TaskStatus
    objective: str = ""
    successCriteria: list[str] = Field(default_factory=list)
    reason: str = ""
    attempt: int = 1


class ActionPlanEvent(BaseEvent):
    """Actionplan mode: the task's whole action list, before any of it runs."""

    type: Literal["actionplan"] = "actionplan"
    actions: list[PlannedStep]


class StepEvent(BaseEvent):
    """A step opened (before its first model call) or closed, with its telemetry."""

    type: Literal["step"] = "step"
    status: StepStatus
    step: int
    """The step number within the task, as shown."""
    method: str = ""
    """"method.action", once it is known."""
    reason: str = ""
    """Why a step failed or was stopped, in words for people."""
    durationMs: int = 0
    """The whole step: selection, parameters, action, observation, refinement."""
    tokens: int = 0
    """Tokens the step spent."""
    promptTokens: int = 0
    """Of those, the prompts' tokens."""
    cachedTokens: int = 0
    """Of the prompts' tokens, those read from a cache: a provider's prompt cache (cheaper), or
    the prefix a local server reused from an earlier call (its slot's KV cache); the rest
    (`promptTokens - cachedTokens`) the server evaluated, which is a local server's time."""
    cost: Cost | None = None
    """What the step's model calls cost; None when the model's price is unknown."""
    model: str = ""
    """The model's label, as on the round (the demo model's label for the offline demo)."""
    calls: list[CallSpend] = Field(default_factory=list)
    """The step's model calls by kind and model, with what each spent (with a small model for
    Stage 2 and the review, a step uses two)."""


class PlanEvent(BaseEvent):
    """Stage 1: the action selected for this step (no parameter values)."""

    type: Literal["plan"] = "plan"
    selection: ActionSelection
    step: int
    """The step number within the task."""


class ActEvent(BaseEvent):
    """Stage 2: the parameters the action runs with, after defaults and sanitising."""

    type: Literal["act"] = "act"
    method: str
    """"method.action"."""
    parameters: dict[str, Any]
    defaultsApplied: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
    """Parameter names the action does not have; removed before validation."""
    documents: list[str] = Field(default_factory=list)
    """The input document references."""
    connection: str | None = None
    """The connection label (never the secret)."""


class ObserveEvent(BaseEvent):
    """What the action produced, as the model will see it."""

    type: Literal["observe"] = "observe"
    observation: Observation
    durationMs: int = 0
    """How long the action ran."""


class RefineEvent(BaseEvent):
    """The decision after observing, with the iteration's telemetry."""

    type: Literal["refine"] = "refine"
    decision: Literal["continue", "stop"]
    reason: str = ""
    criteriaMet: bool = False
    nextHint: str | None = None


class ReviewEvent(BaseEvent):
    """The verdict on a finished task."""

    type: Literal["review"] = "review"
    status: Literal["success", "retry", "failed", "incomplete"]
    """The verdict grounded in what happened: incomplete when the task was cut short while
    its last refinement asked to continue, whatever the model's review said."""
    reason: str = ""
    improvements: list[str] = Field(default_factory=list)
    metCriteria: list[str] = Field(default_factory=list)
    retries: int = 0


class ThoughtEvent(BaseEvent):
    """One thought of Reasoning mode, with the plan as it stands after it."""

    type: Literal["thought"] = "thought"
    number: int
    thinking: str
    planning: list[PlanItem] = Field(default_factory=list)
    """The plan tree as it stands after this thought."""
    plan: str = ""
    """The plan tree rendered as an indented list."""
    nextThoughtNeeded: bool
    durationMs: int = 0
    tokens: int = 0
    cost: Cost | None = None
    """What the thought's model call cost; None when the model's price is unknown."""
    model: str = ""
    """The model's label, as on the round (the demo model's label for the offline demo)."""


class DeltaEvent(BaseEvent):
    """A piece of a message being streamed; the message event that follows holds all of it."""

    type: Literal["delta"] = "delta"
    key: str
    """Identifies the message being streamed (the same key is on its message event)."""
    text: str
    offset: int
    """Characters streamed before this piece."""
    attempt: str = ""
    """Which attempt at the message this piece belongs to: when a new one begins (a streamed
    answer restarted after a crash), the text so far is dropped and streamed again."""


class MessageEvent(BaseEvent):
    """A complete message to persist: an action's record or the final answer."""

    type: Literal["message"] = "message"
    key: str
    role: Literal["user", "assistant", "action", "system"]
    content: str
    """Markdown."""
    summary: str = ""
    documentsLabel: str = ""
    documents: list[DocumentRef] = Field(default_factory=list)
    """The message's documents: an action's results, the answer's products, the user's uploads."""
    success: bool | None = None
    learnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    method: str = ""
    """The action's method, e.g. "web" (action messages)."""
    name: str = ""
    """The action's name, e.g. "search" (action messages)."""
    status: str = ""
    """success | failed | rejected for actions; completed | stopped | failed for answers."""
    messageId: int | None = None
    """The stored message's id (set by the host)."""
    title: str = ""
    """User messages: the workflow's title after this message (set by the host)."""
    reruns: int | None = None
    """User messages: the earlier round this one runs again, edited or as it was (set by the
    host); the round sees only the history before that round."""
    edited: bool = False
    """User messages that rerun a round: whether the text was changed."""


class DocumentEvent(BaseEvent):
    """A document an action produced, stored under its result label."""

    type: Literal["document"] = "document"
    document: DocumentRef


class UsageEvent(BaseEvent):
    """What one model call cost."""

    type: Literal["usage"] = "usage"
    kind: str
    """What the call was for: taskplan, select, parameters, refine, review, … or an action's
    own kind."""
    promptTokens: int = 0
    completionTokens: int = 0
    cachedTokens: int = 0
    """Of the prompt tokens, those the provider read from its prompt cache (cheaper)."""
    latencyMs: int = 0
    model: str = ""
    cost: Cost | None = None
    """What the call cost; None when the model's price is unknown or the demo model answered."""
    workflowTokens: int | None = None
    """The workflow's tokens after this call (set by the host when it stores the event)."""
    workflowCost: float | None = None
    """The workflow's total cost after this call, in the call's currency, when the call's
    cost is known (set by the host when it stores the event)."""


class StatusEvent(BaseEvent):
    """A stop or a notable state, with its stated reason."""

    type: Literal["status"] = "status"
    code: StopCode | Literal["info"]
    reason: str


class ErrorEvent(BaseEvent):
    """Something went wrong; nothing fails silently."""

    type: Literal["error"] = "error"
    kind: Literal["model", "validation", "tool", "rejected", "reference", "internal"]
    """internal: the host failed, not the model or a tool."""
    message: str
    """What failed and what to do, in one or two sentences for people."""
    retrying: bool = False
    """True when a corrective retry follows."""
    detail: str = ""
    """The operator's detail (the model server's address, the settings to check): stored, and
    shown to staff only; the page shows everyone else the message alone, and the public JSON
    leaves it out."""


class AskEvent(BaseEvent):
    """The loop waits for the user: continue after max steps?"""

    type: Literal["ask"] = "ask"
    question: str
    stepsDone: int
    status: Literal["waiting", "answered", "cancelled"] = "waiting"
    """waiting for the user; answered (with `granted`); cancelled when no answer came: not
    within the round's time budget, or the run ended first."""
    granted: int = 0
    """The further steps the user granted (0: stop the task)."""
    reason: str = ""
    """Why it was cancelled when the run ended first (stopped, failed); empty otherwise."""


class ApprovalEvent(BaseEvent):
    """An action waits for approval, or got its answer."""

    type: Literal["approval"] = "approval"
    method: str
    parameters: dict[str, Any]
    status: Literal["waiting", "approved", "rejected", "cancelled"]
    """cancelled when no answer came: not within the round's time budget, or the run ended
    first."""
    reason: str = ""
    """Why it was cancelled when the run ended first (stopped, failed); empty otherwise."""
    documents: list[DocumentRef] = Field(default_factory=list)
    """The documents the action will read (its references, resolved), so the user approves
    what it will use."""
    connection: str | None = None
    """The connection it will run with, by label (never the secret)."""


EngineEvent: TypeAlias = (
    RoundEvent
    | TaskPlanEvent
    | TaskEvent
    | ActionPlanEvent
    | StepEvent
    | PlanEvent
    | ActEvent
    | ObserveEvent
    | RefineEvent
    | ReviewEvent
    | ThoughtEvent
    | DeltaEvent
    | MessageEvent
    | DocumentEvent
    | UsageEvent
    | StatusEvent
    | ErrorEvent
    | AskEvent
    | ApprovalEvent
)
"""Every event the engine emits, as a plain union the type checker sees member by member
(the host composes it with its own events into the full contract)."""

Event = Annotated[EngineEvent, Field(discriminator="type")]
"""The engine's union, discriminated by `type` for validation."""

ENGINE_EVENTS: tuple[type[BaseEvent], ...] = get_args(EngineEvent)
"""Every event model the engine emits; the host adds its own to make the full contract."""

event_adapter: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates a dumped event back into its model (e.g. `event_adapter.validate_python(d)`)."""
