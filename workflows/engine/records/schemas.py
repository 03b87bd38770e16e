"""What the model reads and writes, typed: task plans, selections, parameters, observations.

Models the model writes forbid undeclared fields (an unexpected key is a mistake to
correct, not to ignore). JSON names are camelCase as in the seeds; the chain-of-thought
structures keep seed 002's snake_case names.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from workflows.engine.records.protocols import WebFinding

FORBIDDEN_PARAMETER_NAMES = frozenset(
    {"documentList", "connectionReference", "history", "documents", "connections"}
)
"""Never business parameters: references come from Stage 1, context never enters Stage 2."""


# Every text the model writes is capped: a runaway answer is rejected with an error the
# corrective retry can act on ("… should have at most N characters"), never stored, shown or
# sent on to the next prompt whole.
Name = Annotated[str, StringConstraints(max_length=100)]
"""Action names, labels, field names, types."""
Line = Annotated[str, StringConstraints(max_length=300)]
"""A criterion, a learning, an improvement, a reference, a field description."""
TEXT_MAX = 1_000
Text = Annotated[str, StringConstraints(max_length=TEXT_MAX)]
"""An objective, a reason, an overview."""


def as_objective(request: str) -> str:
    """A user's request as a task's objective (a Text): a long one is cut, marked with …
    (the whole request still reaches every prompt as the user request)."""
    request = request.strip()
    return request if len(request) <= TEXT_MAX else request[: TEXT_MAX - 1] + "…"


Answer = Annotated[str, StringConstraints(max_length=12_000)]
"""The answer to the user written with a refinement decision (markdown)."""
Passage = Annotated[str, StringConstraints(max_length=2_000)]
"""Context for Stage 2, a plan step's result."""
Thinking = Annotated[str, StringConstraints(max_length=8_000)]
"""A thought, which may hold the final solution in Reasoning mode."""
ITEMS = 10
"""At most this many items in a list of lines (learnings, criteria, improvements, …)."""
PLAN_STEPS, PLAN_DEPTH = 60, 4
"""A reasoning plan's size: steps in all, and levels of sub-steps."""


class ModelOutput(BaseModel):
    """Base of everything the model writes: undeclared fields are an error."""

    model_config = ConfigDict(extra="forbid")


TASK_TYPES = ("research", "analysis", "lookup", "document", "general")
_DECORATION = re.compile(
    r"\s*\((?:\d+ documents?(?:\(s\))?(?:, sent with this message)?|[^()]*\d+ bytes)\)\s*$"
)
"""How the prompt's documents list decorates a reference: `(1 document(s))`, `(text/plain, 5
bytes)`; small models copy it along."""


def clean_reference(reference: str) -> str:
    """A reference as the host writes it: decoration, quotes and list marks dropped, and a bare
    label read as `docList:<label>`."""
    text = _DECORATION.sub("", reference.strip().lstrip("-*• ").strip("`'\"")).strip()
    if text and not text.startswith(("docList:", "docItem:")):
        return f"docList:{text}"
    return text


# --- Round and task planning ---------------------------------------------------------------


class TaskItem(ModelOutput):
    """One task of a round."""

    objective: Text = Field(min_length=1)
    successCriteria: list[Line] = Field(default_factory=list, max_length=ITEMS)
    taskType: Name = Field(
        default="general", description="research | analysis | lookup | document | general"
    )


# --- React Stage 1: selection ------------------------------------------------------------


class ParameterField(ModelOutput):
    """One business parameter Stage 2 should fill."""

    name: Name
    type: Name = "string"
    """string | number | boolean | enum | object (anything else is kept as written)."""
    required: bool = False
    description: Line = ""


class ParametersSchema(ModelOutput):
    """The business parameters Stage 1 asks Stage 2 to fill."""

    fields: list[ParameterField] = Field(default_factory=list, max_length=20)

    @field_validator("fields")
    @classmethod
    def _no_context_fields(cls, fields: list[ParameterField]) -> list[ParameterField]:
        named = sorted({f.name for f in fields} & FORBIDDEN_PARAMETER_NAMES)
        if named:
            raise ValueError(
                f"parametersSchema must not name {', '.join(named)}: documents and connections "
                "are chosen in requiredInputDocuments/requiredConnection"
            )
        return fields


class ActionSelection(ModelOutput):
    """Stage 1: the next single action, its objective and references; never parameter values."""

    action: Name = Field(description='"method.action" from the catalog')
    actionObjective: Text = ""
    learnings: list[Line] = Field(default_factory=list, max_length=ITEMS)
    requiredInputDocuments: list[Line] = Field(
        default_factory=list,
        max_length=20,
        description="docList:<label> or docItem:<id>:<name> references",
    )
    requiredConnection: Name | None = None
    parametersContext: Passage = Field(default="", description="Concise context for Stage 2")
    parametersSchema: ParametersSchema = Field(default_factory=ParametersSchema)

    @field_validator("requiredInputDocuments", mode="before")
    @classmethod
    def _clean_references(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return [clean_reference(item) if isinstance(item, str) else item for item in value]
        return value

    @field_validator("requiredConnection", mode="before")
    @classmethod
    def _no_connection(cls, value: Any) -> Any:
        return None if value in ("", "null", "none", "None") else value

    @model_validator(mode="before")
    @classmethod
    def _stage_one_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "parameters" in data:
            raise ValueError(
                "Stage 1 must not include `parameters`: select the action only; "
                "parameter values are collected in Stage 2"
            )
        action = data.get("action")
        if isinstance(action, dict):  # the older {"action": {"method", "name"}} shape
            method, name = action.get("method"), action.get("name")
            if not (isinstance(method, str) and isinstance(name, str)):
                raise ValueError('action must be "method.action"')
            data = {**data, "action": f"{method}.{name}"}
        return data

    @property
    def method(self) -> str:
        """The method part of the action, e.g. "web"."""
        return self.action.partition(".")[0]

    @property
    def name(self) -> str:
        """The action part, e.g. "search"."""
        return self.action.partition(".")[2]


class TaskPlan(ModelOutput):
    """A round split into tasks; no tasks means the request is answered directly. In React
    mode the plan may carry the first task's first action, as Stage 1 would write it."""

    approach: Literal["direct", "actions"] = "actions"
    """Decided first: "direct" answers without any action (the tasks are then ignored), so a
    small model makes the choice as one word rather than as an empty list."""
    overview: Text = ""
    tasks: list[TaskItem] = Field(default_factory=list, max_length=8)
    firstAction: ActionSelection | None = None


# --- React Stage 2: parameters ------------------------------------------------------------


class ActionParameters(ModelOutput):
    """Stage 2: the business parameter values of the selected action."""

    schema_: Literal["parameters_v1"] = Field(default="parameters_v1", alias="schema")
    parameters: dict[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# --- Observe, refine, review --------------------------------------------------------------


class Preview(BaseModel):
    """A short look at one produced document."""

    model_config = ConfigDict(extra="forbid")

    name: str
    mime: str
    snippet: str = ""


class Observation(BaseModel):
    """What the host tells the model about one action: compact, never raw payloads."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    resultLabel: str
    documentsCount: int = 0
    previews: list[Preview] = Field(default_factory=list, max_length=5)
    notes: list[str] = Field(default_factory=list)
    findings: list[WebFinding] = Field(default_factory=list)
    """Web results: per-URL relevance, key points, entities."""
    error: str | None = None
    unread: list[str] = Field(default_factory=list)
    """Inputs the action could not use, with why: told to the model, shown on the page and
    in the answer; kept whole when the observation is cut to size (counted at the last)."""


class RefinementDecision(ModelOutput):
    """After observing: stop, or go on with the next action (seed 001: refine "decides: stop
    with final answer or propose next single action"), written as Stage 1 writes it."""

    decision: Literal["continue", "stop"]
    reason: Text = ""
    criteriaMet: bool = False
    """With stop: true when the success criteria are met, false when nothing more can help."""
    next: ActionSelection | None = None
    """With continue: the next action, checked exactly like a Stage 1 answer."""


class AnsweringRefinement(RefinementDecision):
    """Refine in a round of one task: with stop and the criteria met it also writes the answer
    to the user (seed 001: "stop with final answer"), so no separate call does. The host checks
    that answer as it checks any (what failed, documents it names)."""

    answer: Answer | None = None


class TaskReview(ModelOutput):
    """The verdict on a finished task."""

    status: Literal["success", "retry", "failed"]
    reason: Text = ""
    improvements: list[Line] = Field(default_factory=list, max_length=ITEMS)
    metCriteria: list[Line] = Field(default_factory=list, max_length=ITEMS)


class AnsweringReview(TaskReview):
    """The review of an Actionplan round's only task: with success it also writes the answer
    to the user, so no separate call does (the host checks it like any answer)."""

    answer: Answer | None = None


# --- Actionplan (legacy) --------------------------------------------------------------------


class PlannedAction(ModelOutput):
    """One action of an upfront plan, parameters included."""

    action: Name
    actionObjective: Text = ""
    requiredInputDocuments: list[Line] = Field(default_factory=list, max_length=20)
    requiredConnection: Name | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    resultLabel: Name = "results"

    @field_validator("requiredInputDocuments", mode="before")
    @classmethod
    def _clean_references(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [clean_reference(item) if isinstance(item, str) else item for item in value]
        return value


class ActionPlan(ModelOutput):
    """Actionplan mode: the whole action list of a task."""

    actions: list[PlannedAction] = Field(min_length=1, max_length=20)


# --- Reasoning (seed 002) -------------------------------------------------------------------


class PlanStep(ModelOutput):
    """One step of the reasoning plan, possibly with nested sub-steps."""

    description: Text
    status: Literal["Pending", "Done", "Verification Needed"] = "Pending"
    result: Passage | None = None
    mark: Line | None = None
    """Why the step needs verification."""
    sub_steps: list[PlanStep] | None = Field(default=None, max_length=ITEMS)


class Thought(ModelOutput):
    """One thought: evaluation of the previous one, the next step done, the updated plan."""

    current_thinking: Thinking = Field(min_length=1)
    planning: list[PlanStep] = Field(default_factory=list, max_length=30)
    next_thought_needed: bool

    @model_validator(mode="after")
    def _plan_is_bounded(self) -> Thought:
        def measure(steps: list[PlanStep], depth: int) -> tuple[int, int]:
            count, deepest = len(steps), depth
            for step in steps:
                if step.sub_steps:
                    more, deeper = measure(step.sub_steps, depth + 1)
                    count, deepest = count + more, max(deepest, deeper)
            return count, deepest

        count, depth = measure(self.planning, 1)
        if depth > PLAN_DEPTH or count > PLAN_STEPS:
            raise ValueError(
                f"the plan has {count} steps {depth} levels deep; at most {PLAN_STEPS} steps "
                f"and {PLAN_DEPTH} levels are allowed"
            )
        return self


def render_plan(steps: list[PlanStep], depth: int = 0) -> str:
    """The plan as an indented list: `- [Done] step: result`."""
    lines: list[str] = []
    for step in steps:
        line = f"{'  ' * depth}- [{step.status}] {step.description}"
        if step.result:
            line += f": {step.result}"
        if step.mark:
            line += f" (check: {step.mark})"
        lines.append(line)
        if step.sub_steps:
            lines.append(render_plan(step.sub_steps, depth + 1))
    return "\n".join(lines)
