"""Answers shaped for one call: the models of `schemas` narrowed to the live state.

The same models narrowed to the live state: the actions allowed for this task, the documents
and connections that exist. Sent as the call's JSON schema, a server that enforces it (vLLM,
llama.cpp, OpenAI) cannot produce anything else, and a validation error names the valid
values. Built once per distinct state (a run asks for the same few) and returned to the loop
as the plain models (`plain`).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from workflows.engine.model import formats
from workflows.engine.records.schemas import (
    TASK_TYPES,
    ActionParameters,
    ActionPlan,
    ActionSelection,
    AnsweringRefinement,
    AnsweringReview,
    Line,
    PlannedAction,
    RefinementDecision,
    TaskItem,
    TaskPlan,
    TaskReview,
)

M = TypeVar("M", bound=BaseModel)
_PLAIN: weakref.WeakKeyDictionary[type[BaseModel], type[BaseModel]] = weakref.WeakKeyDictionary()
"""The plain model each narrowed one narrows (held weakly: a model built for a step goes
when no cache holds it)."""
PLACEHOLDER = "\x00reference"
"""The one reference of the models whose schemas the others' are filled in from."""
REFERENCES_SHOWN = 40
"""At most this many references in an enum (the newest); older ones still resolve when named
in a server that does not enforce the schema."""
REFERENCES_PER_ACTION = 10
"""At most this many references one action reads (fewer when fewer exist)."""


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
    # Ignored for mypy below: the plain model M narrows, by _PLAIN.
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
            list[_choice(shown)],  # type: ignore[misc]  # a Literal built at run time
            Field(default_factory=list, max_length=min(len(shown), REFERENCES_PER_ACTION)),
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
        template, PLACEHOLDER, shown, min(len(shown), REFERENCES_PER_ACTION)
    )
    _PLAIN[stand_in] = _PLAIN.get(validating, validating)
    return stand_in


@functools.lru_cache(maxsize=256)
def asked_as(output: type[M], how: formats.Asked) -> type[M]:
    """`output` asked for without a schema (formats.ASKED): as a JSON object, or as a JSON
    object followed by the answer to the user in plain text. It validates as `output` and
    comes back as the plain model `output` narrows."""
    stand_in: type[M] = type(
        output.__name__,
        (output,),
        {
            "__module__": output.__module__,
            "__doc__": output.__doc__,
            "model_config": ConfigDict(defer_build=True),  # never built: it never validates
            "model_validate": classmethod(lambda cls, *a, **k: output.model_validate(*a, **k)),
            "model_validate_json": classmethod(
                lambda cls, *a, **k: output.model_validate_json(*a, **k)
            ),
            "model_json_schema": classmethod(
                lambda cls, *a, **k: output.model_json_schema(*a, **k)
            ),
        },
    )
    formats.ASKED[stand_in] = how
    if (template := formats.SCHEMA_TEMPLATES.get(output)) is not None:
        formats.SCHEMA_TEMPLATES[stand_in] = template
    _PLAIN[stand_in] = _PLAIN.get(output, output)
    return stand_in


@functools.lru_cache(maxsize=256)
def review_output(criteria: tuple[str, ...], *, answering: bool = False) -> type[TaskReview]:
    """The review for this task: the met criteria are chosen among the task's own (none when
    it has none), the improvements few; `answering`: it may carry the answer to the user."""
    met: Any = (list[Line], Field(default_factory=list, max_length=0))
    if criteria:
        # Ignored for mypy below: a Literal built at run time.
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
    if references is not None and (not first or plan):  # not in the answer: one model for all
        return taskplan_output(max_tasks, first, actions, None, connections, direct, plan)
    if _templated(references):
        return _by_template(
            _taskplan(max_tasks, first, actions, None, connections, direct, plan),
            _taskplan(max_tasks, first, actions, (PLACEHOLDER,), connections, direct, plan),
            references,
        )
    return _taskplan(max_tasks, first, actions, references, connections, direct, plan)


@functools.lru_cache(maxsize=256)
def _taskplan(
    max_tasks: int,
    first: bool,
    actions: tuple[str, ...],
    references: tuple[str, ...] | None,
    connections: tuple[str, ...],
    direct: bool,
    plan: int,
) -> type[TaskPlan]:
    item = _narrowed(
        TaskItem,
        taskType=(_choice(TASK_TYPES), "general"),
        successCriteria=(list[Line], Field(default_factory=list, max_length=3)),
    )
    tasks: Any = (
        list[item],  # type: ignore[valid-type]  # a model class built at run time
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
    model = _narrowed(TaskPlan, firstAction=(action | None, None), **fields)
    if direct and references is not None:  # a narrow layout: a grammar that ends at "direct"
        formats.BRANCHES[model] = DIRECT_ENDS
    return model


DIRECT_ENDS = formats.Branching(
    "approach",
    {"direct": {"tasks": {"type": "array", "maxItems": 0}, "firstAction": {"type": "null"}}},
)
"""A task plan that answers directly has no tasks and no first action: a small model that
chose "direct" writes an overview and stops (it wrote a task and its first action anyway,
hundreds of tokens that were dropped)."""


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
        # Ignored for mypy below: a model class built at run time.
        actions=(list[planned], Field(min_length=1, max_length=max(1, max_actions))),  # type: ignore[valid-type]
    )
