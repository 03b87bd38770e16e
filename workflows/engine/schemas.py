"""What the model reads and writes, typed: task plans, selections, parameters, observations.

Models the model writes forbid undeclared fields (an unexpected key is a mistake to
correct, not to ignore). JSON names are camelCase as in the seeds; the chain-of-thought
structures keep seed 002's snake_case names.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    field_validator,
    model_validator,
)

from . import formats
from .contracts import WebFinding

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
Text = Annotated[str, StringConstraints(max_length=1_000)]
Answer = Annotated[str, StringConstraints(max_length=12_000)]
"""The answer to the user written with a refinement decision (markdown)."""
"""An objective, a reason, an overview."""
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
_DECORATION = re.compile(r"\s*\((?:\d+ documents?(?:\(s\))?|[^()]*\d+ bytes)\)\s*$")
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


# --- Answers shaped for one call ----------------------------------------------------------
# The same models narrowed to the live state: the actions allowed for this task, the documents
# and connections that exist. Sent as the call's JSON schema, a server that enforces it (vLLM,
# llama.cpp, OpenAI) cannot produce anything else, and a validation error names the valid
# values. Built once per distinct state (a run asks for the same few) and returned to the loop
# as the plain models (`plain`).

M = TypeVar("M", bound=BaseModel)
_PLAIN: weakref.WeakKeyDictionary[type[BaseModel], type[BaseModel]] = weakref.WeakKeyDictionary()
"""The plain model each narrowed one narrows (held weakly: a model built for a step goes
when no cache holds it)."""
PLACEHOLDER = "\x00reference"
"""The one reference of the models whose schemas the others' are filled in from."""
REFERENCES_SHOWN = 40
"""At most this many references in an enum (the newest); older ones still resolve when named
in a server that does not enforce the schema."""


def _choice(values: Sequence[str]) -> Any:
    return Literal[tuple(values)]


def _narrowed(base: type[M], **fields: Any) -> type[M]:
    plain = _PLAIN.get(base, base)
    name = SCHEMA_NAMES.get(plain, plain.__name__)  # the schema's name
    model = create_model(name, __base__=base, **fields)
    _PLAIN[model] = plain
    return model


def plain(value: M) -> M:
    """An answer validated by a model built for its call, as the plain model it narrows."""
    base = _PLAIN.get(type(value))
    if base is None:
        return value
    values = value.model_dump(by_alias=True, exclude_unset=True)  # defaults stay the plain one's
    return base.model_validate(values)  # type: ignore[return-value]


def _selection_fields(
    actions: tuple[str, ...], references: tuple[str, ...] | None, connections: tuple[str, ...]
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "learnings": (list[Line], Field(default_factory=list, max_length=5)),
    }
    if actions:
        fields["action"] = (_choice(actions), ...)
    if references is None:  # not enumerated: checked after the answer (a stable schema)
        pass
    elif references:
        shown = references[-REFERENCES_SHOWN:]
        fields["requiredInputDocuments"] = (
            list[_choice(shown)],  # type: ignore[misc]
            Field(default_factory=list, max_length=min(len(shown), 10)),
        )
    else:
        fields["requiredInputDocuments"] = (list[Line], Field(default_factory=list, max_length=0))
    if connections:
        fields["requiredConnection"] = (_choice(connections) | None, None)
    else:
        fields["requiredConnection"] = (None, None)
    return fields


@functools.lru_cache(maxsize=256)
def selection_output(
    actions: tuple[str, ...],
    references: tuple[str, ...] | None = (),
    connections: tuple[str, ...] = (),
) -> type[ActionSelection]:
    """Stage 1's answer for this call: `action` one of `actions`, references among those that
    exist (none when there are none; any, checked after the answer, when None), the connection
    one of the user's labels or null."""
    if _templated(references):
        return _by_template(
            _narrowed_selection(actions, None, connections),
            _narrowed_selection(actions, (PLACEHOLDER,), connections),
            references,
        )
    return _narrowed_selection(actions, references, connections)


@functools.lru_cache(maxsize=256)
def _narrowed_selection(
    actions: tuple[str, ...], references: tuple[str, ...] | None, connections: tuple[str, ...]
) -> type[ActionSelection]:
    return _narrowed(ActionSelection, **_selection_fields(actions, references, connections))


@functools.lru_cache(maxsize=256)
def refinement_output(
    actions: tuple[str, ...],
    references: tuple[str, ...] | None = (),
    connections: tuple[str, ...] = (),
    *,
    answering: bool = False,
) -> type[RefinementDecision]:
    """Refine's answer for this call: its next action narrowed like Stage 1's; `answering`: it
    may carry the answer to the user (AnsweringRefinement)."""
    if _templated(references):
        return _by_template(
            refinement_output(actions, None, connections, answering=answering),
            refinement_output(actions, (PLACEHOLDER,), connections, answering=answering),
            references,
        )
    selection = _narrowed_selection(actions, references, connections)
    base = AnsweringRefinement if answering else RefinementDecision
    return _narrowed(base, next=(selection | None, None))


# The documents that exist change at every step, and building a model takes a millisecond or
# two. A call whose schema enumerates them gets a stand-in instead, built in a tenth of that:
# it validates as the same model without the enumeration (the references are checked after
# the answer, as for a stable schema) and its schema is the placeholder model's, filled in.


def _templated(references: tuple[str, ...] | None) -> bool:
    return bool(references) and references != (PLACEHOLDER,)


def _by_template(
    validating: type[M], template: type[BaseModel], references: tuple[str, ...] | None
) -> type[M]:
    """A model that validates as `validating` and whose schema is `template`'s with the
    placeholder reference replaced by `references` (the newest REFERENCES_SHOWN)."""
    assert references
    shown = references[-REFERENCES_SHOWN:]
    stand_in: type[M] = type(
        validating.__name__,
        (validating,),
        {
            "__module__": validating.__module__,
            "__doc__": validating.__doc__,
            "model_config": ConfigDict(defer_build=True),  # never built: it never validates
            "model_validate": classmethod(lambda cls, *a, **k: validating.model_validate(*a, **k)),
            "model_validate_json": classmethod(
                lambda cls, *a, **k: validating.model_validate_json(*a, **k)
            ),
        },
    )
    formats.SCHEMA_TEMPLATES[stand_in] = formats.SchemaTemplate(
        template, PLACEHOLDER, shown, min(len(shown), 10)
    )
    _PLAIN[stand_in] = _PLAIN.get(validating, validating)
    return stand_in


@functools.lru_cache(maxsize=256)
def review_output(criteria: tuple[str, ...], *, answering: bool = False) -> type[TaskReview]:
    """The review for this task: the met criteria are chosen among the task's own (none when
    it has none), the improvements few; `answering`: it may carry the answer to the user."""
    met: Any = (list[Line], Field(default_factory=list, max_length=0))
    if criteria:
        met = (list[_choice(criteria)], Field(default_factory=list, max_length=len(criteria)))  # type: ignore[misc]
    return _narrowed(
        AnsweringReview if answering else TaskReview,
        metCriteria=met,
        improvements=(list[Line], Field(default_factory=list, max_length=3)),
    )


@functools.lru_cache(maxsize=256)
def parameters_output(model: type[BaseModel], names: tuple[str, ...]) -> type[ActionParameters]:
    """Stage 2's answer for this call: `parameters` holds exactly the fields Stage 1 asked
    for, typed as the action's own model types them (enums, numbers, bounds), so a server that
    enforces the schema cannot send `"format": "md"` to an action that takes markdown or text."""
    fields: dict[str, Any] = {
        name: (model.model_fields[name].annotation, model.model_fields[name])
        for name in names
        if name in model.model_fields
    }
    if not fields:
        return ActionParameters
    # Sent closed (additionalProperties false, so it can be strict); an unknown key a server
    # lets through is kept for prepare_parameters, which drops it and says so.
    config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})
    values = create_model(f"{model.__name__}Values", __config__=config, **fields)
    return _narrowed(ActionParameters, parameters=(values, ...))


class _TaskPlanAlone(TaskPlan):
    """A task plan asked for without a first action: one given anyway is dropped, not run."""

    firstAction: None = None

    @model_validator(mode="before")
    @classmethod
    def _drop_first_action(cls, data: Any) -> Any:
        return {**data, "firstAction": None} if isinstance(data, dict) else data


_PLAIN[_TaskPlanAlone] = TaskPlan


class TaskPlanWithActions(_TaskPlanAlone):
    """Actionplan mode: the task plan may carry the whole action list of a round's only task
    (one call fewer: its Actionplan call), checked like that call's answer."""

    plan: Annotated[list[PlannedAction], Field(min_length=1, max_length=20)] | None = None


_PLAIN[TaskPlanWithActions] = TaskPlanWithActions
SCHEMA_NAMES: dict[type[BaseModel], str] = {
    AnsweringRefinement: "RefinementDecision",
    AnsweringReview: "TaskReview",
    TaskPlanWithActions: "TaskPlan",
}
"""The answers that may carry more go by the name of the answer they extend: the call is the
same kind of call (a host or a log tells calls apart by the schema's name)."""


@functools.lru_cache(maxsize=256)
def taskplan_output(
    max_tasks: int,
    first: bool,
    actions: tuple[str, ...] = (),
    references: tuple[str, ...] | None = (),
    connections: tuple[str, ...] = (),
    direct: bool = True,
    plan: int = 0,
) -> type[TaskPlan]:
    """The task plan for this call: at most `max_tasks` tasks of the known types (none when
    the request needs no action); with `first`, a first action narrowed like Stage 1's (its
    name free when `actions` is empty), otherwise none; with `plan` (Actionplan), the only
    task's action list of at most `plan` actions, or null. Without `direct` (documents came
    with the request: only an action reads them) the approach is "actions" and a task is
    needed."""
    item = _narrowed(
        TaskItem,
        taskType=(_choice(TASK_TYPES), "general"),
        successCriteria=(list[Line], Field(default_factory=list, max_length=3)),
    )
    tasks: Any = (
        list[item],  # type: ignore[valid-type]
        Field(default_factory=list, min_length=0 if direct else 1, max_length=max_tasks),
    )
    fields: dict[str, Any] = {"tasks": tasks}
    if not direct:
        fields["approach"] = (Literal["actions"], "actions")
    if plan:
        planned: Any = actionplan_output(actions, connections, plan).model_fields["actions"]
        listed: Any = Annotated[planned.annotation, Field(min_length=1, max_length=plan)]
        return _narrowed(TaskPlanWithActions, plan=(listed | None, None), **fields)
    if not first:
        return _narrowed(_TaskPlanAlone, **fields)
    action = _narrowed_selection(actions, references, connections)
    return _narrowed(TaskPlan, firstAction=(action | None, None), **fields)


@functools.lru_cache(maxsize=256)
def actionplan_output(
    actions: tuple[str, ...], connections: tuple[str, ...], max_actions: int
) -> type[ActionPlan]:
    """Actionplan's answer for this call: actions of the task's catalog, at most
    `max_actions` of them (references stay free: later actions name earlier results)."""
    fields: dict[str, Any] = {}
    if actions:
        fields["action"] = (_choice(actions), ...)
    fields["requiredConnection"] = (
        (_choice(connections) | None, None) if connections else (None, None)
    )
    planned = _narrowed(PlannedAction, **fields)
    return _narrowed(
        ActionPlan,
        actions=(list[planned], Field(min_length=1, max_length=max(1, max_actions))),  # type: ignore[valid-type]
    )


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
