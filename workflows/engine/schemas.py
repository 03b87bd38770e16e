"""What the model reads and writes, typed: task plans, selections, parameters, observations.

Models the model writes forbid undeclared fields (an unexpected key is a mistake to
correct, not to ignore). JSON names are camelCase as in the seeds; the chain-of-thought
structures keep seed 002's snake_case names.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .contracts import WebFinding

FORBIDDEN_PARAMETER_NAMES = frozenset(
    {"documentList", "connectionReference", "history", "documents", "connections"}
)
"""Never business parameters: references come from Stage 1, context never enters Stage 2."""


class ModelOutput(BaseModel):
    """Base of everything the model writes: undeclared fields are an error."""

    model_config = ConfigDict(extra="forbid")


# --- Round and task planning ---------------------------------------------------------------


class TaskItem(ModelOutput):
    """One task of a round."""

    objective: str = Field(min_length=1)
    successCriteria: list[str] = Field(default_factory=list)
    taskType: str = Field(
        default="general", description="research | analysis | lookup | document | general"
    )


# --- React Stage 1: selection ------------------------------------------------------------


class ParameterField(ModelOutput):
    """One business parameter Stage 2 should fill."""

    name: str
    type: str = "string"
    """string | number | boolean | enum | object (anything else is kept as written)."""
    required: bool = False
    description: str = ""


class ParametersSchema(ModelOutput):
    """The business parameters Stage 1 asks Stage 2 to fill."""

    fields: list[ParameterField] = Field(default_factory=list)

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

    action: str = Field(description='"method.action" from the catalog')
    actionObjective: str = ""
    learnings: list[str] = Field(default_factory=list)
    requiredInputDocuments: list[str] = Field(
        default_factory=list, description="docList:<label> or docItem:<id>:<name> references"
    )
    requiredConnection: str | None = None
    parametersContext: str = Field(default="", description="Concise context for Stage 2")
    parametersSchema: ParametersSchema = Field(default_factory=ParametersSchema)

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

    overview: str = ""
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

    name: str
    mime: str
    snippet: str = ""


class Observation(BaseModel):
    """What the host tells the model about one action: compact, never raw payloads."""

    success: bool
    resultLabel: str
    documentsCount: int = 0
    previews: list[Preview] = Field(default_factory=list, max_length=5)
    notes: list[str] = Field(default_factory=list)
    findings: list[WebFinding] = Field(default_factory=list)
    """Web results: per-URL relevance, key points, entities."""
    error: str | None = None


class RefinementDecision(ModelOutput):
    """After observing: stop, or go on with the next action (seed 001: refine "decides: stop
    with final answer or propose next single action"), written as Stage 1 writes it."""

    decision: Literal["continue", "stop"]
    reason: str = ""
    criteriaMet: bool = False
    """With stop: true when the success criteria are met, false when nothing more can help."""
    next: ActionSelection | None = None
    """With continue: the next action, checked exactly like a Stage 1 answer."""


class TaskReview(ModelOutput):
    """The verdict on a finished task."""

    status: Literal["success", "retry", "failed"]
    reason: str = ""
    improvements: list[str] = Field(default_factory=list)
    metCriteria: list[str] = Field(default_factory=list)


# --- Actionplan (legacy) --------------------------------------------------------------------


class PlannedAction(ModelOutput):
    """One action of an upfront plan, parameters included."""

    action: str
    actionObjective: str = ""
    requiredInputDocuments: list[str] = Field(default_factory=list)
    requiredConnection: str | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    resultLabel: str = "results"


class ActionPlan(ModelOutput):
    """Actionplan mode: the whole action list of a task."""

    actions: list[PlannedAction] = Field(min_length=1)


# --- Reasoning (seed 002) -------------------------------------------------------------------


class PlanStep(ModelOutput):
    """One step of the reasoning plan, possibly with nested sub-steps."""

    description: str
    status: Literal["Pending", "Done", "Verification Needed"] = "Pending"
    result: str | None = None
    mark: str | None = None
    """Why the step needs verification."""
    sub_steps: list[PlanStep] | None = None


class Thought(ModelOutput):
    """One thought: evaluation of the previous one, the next step done, the updated plan."""

    current_thinking: str = Field(min_length=1)
    planning: list[PlanStep] = Field(default_factory=list)
    next_thought_needed: bool


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
