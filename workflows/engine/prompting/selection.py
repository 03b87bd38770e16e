"""What Stage 1 and Actionplan's planning share: the task's catalog and the prompt around it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from workflows.engine.loop.actions import failed_observation, record_step
from workflows.engine.loop.core import Rejected, RoundContext, Step, TaskState
from workflows.engine.loop.guards import allowed_tools, is_allowed
from workflows.engine.prompting.narrowed import refinement_output, selection_output
from workflows.engine.prompting.prompts import (
    build,
    fit_history,
    render_connections,
    render_documents,
    render_list,
    selection_format,
)
from workflows.engine.records.events import Event
from workflows.engine.records.protocols import DocumentRef, Message, Tool
from workflows.engine.records.references import ReferenceNotFound, resolve_references
from workflows.engine.records.schemas import (
    FORBIDDEN_PARAMETER_NAMES,
    ActionSelection,
    RefinementDecision,
)

FORBIDDEN_TEXT = ", ".join(sorted(FORBIDDEN_PARAMETER_NAMES))
LABELS_SHOWN = ITEMS_SHOWN = 20
"""References offered as choices: the newest labels, and the newest single documents."""


def task_tools(ctx: RoundContext, task: TaskState) -> list[Tool]:
    """The actions this task may use, in catalog order."""
    return allowed_tools(ctx.state.policy, task.item.taskType, ctx.tools.tools())


def unavailable_actions(ctx: RoundContext, task_type: str = "general") -> dict[str, str]:
    """The actions a task of this type could use if they were available here, each with the
    reason it is not (no search provider, a failing server): from the executor's
    `unavailable()`."""
    return {
        name: reason
        for name, reason in ctx.tools.unavailable().items()
        if is_allowed(ctx.state.policy, task_type, name)
    }


def choosable(
    ctx: RoundContext, task_type: str, tools: Sequence[Tool], tried: Iterable[str] = ()
) -> tuple[str, ...]:
    """The action names an answer may hold: the task's tools, and the unavailable ones not
    `tried` yet (choosing one runs nothing: the step says why, the answer names it)."""
    names = [tool.name for tool in tools]
    skip = {*names, *tried}
    names += [n for n in unavailable_actions(ctx, task_type) if "*" not in n and n not in skip]
    return tuple(names)


def schema_references(ctx: RoundContext) -> tuple[str, ...] | None:
    """The references a call's schema enumerates: those that exist (narrow schemas), or None
    (stable schemas: the answer's references are checked after it)."""
    if ctx.state.schemas != "narrow":
        return None
    return reference_choices(ctx.store.index())


def reference_choices(index: Sequence[DocumentRef]) -> tuple[str, ...]:
    """The references an answer may name: the newest docList labels, then the newest single
    documents as docItem references."""
    labels = list(dict.fromkeys(f"docList:{ref.label}" for ref in reversed(index)))
    items = [f"docItem:{ref.id}:{ref.name}" for ref in reversed(index)]
    return (*reversed(labels[:LABELS_SHOWN]), *reversed(items[:ITEMS_SHOWN]))


def selection_choices(
    ctx: RoundContext, task: TaskState, *, actions: bool = True
) -> tuple[tuple[str, ...], tuple[str, ...] | None, tuple[str, ...]]:
    """The actions (none: any name), references (None: any, checked after the answer) and
    connection labels a selection for this task may hold."""
    names = (
        choosable(ctx, task.item.taskType, task_tools(ctx, task), task.missing) if actions else ()
    )
    return names, schema_references(ctx), tuple(c.label for c in ctx.state.connections)


def selection_output_for(
    ctx: RoundContext, task: TaskState, *, actions: bool = True
) -> type[ActionSelection]:
    """Stage 1's answer narrowed to this task now. `actions=False` leaves the action name free
    (a catalog cut for a large task: the check names the listed tools and the search)."""
    return selection_output(*selection_choices(ctx, task, actions=actions))


def refinement_output_for(
    ctx: RoundContext, task: TaskState, *, actions: bool = True
) -> type[RefinementDecision]:
    """Refine's answer narrowed like Stage 1's; in a round of one task it may carry the
    answer to the user."""
    choices = selection_choices(ctx, task, actions=actions)
    return refinement_output(*choices, answering=answers_with_refine(ctx))


def answers_with_refine(ctx: RoundContext) -> bool:
    """Whether refine writes the round's answer when it stops with the criteria met: in React
    mode, when the round has one task (the answer of several tasks needs all their results)."""
    return ctx.state.mode == "react" and len(ctx.tasks) == 1


def answers_with_review(ctx: RoundContext) -> bool:
    """Whether the review writes the round's answer when it judges success: in Actionplan
    mode, when the round has one task."""
    return ctx.state.mode == "actionplan" and len(ctx.tasks) == 1


def answer_rule(ctx: RoundContext, when: str) -> str:
    """The line of an instruction that asks for the answer to the user (`when`: with which
    verdict)."""
    return (
        f'\n- "answer": {when}, your answer to the user\'s request, in the language '
        f'"{ctx.state.language}", in markdown: concise, complete and grounded only in the steps '
        "and the latest observation; name only documents that the steps produced (the page "
        "links them). Otherwise null."
    )


def selection_messages(
    ctx: RoundContext, task_state: TaskState, template: str, *, tools: list[Tool], **values: Any
) -> list[Message]:
    """A prompt that chooses actions (Stage 1, refine, Actionplan): the catalog in the system
    message; the task, documents, connections and learnings in the user message, its history
    cut until the prompt fits (`values` fill the template's own fields)."""
    task = task_state

    def with_history(history: str) -> list[Message]:
        return build(
            template,
            purposes=ctx.layout(template) == "narrow",
            tools=tools,
            unavailable=unavailable_actions(ctx, task.item.taskType),
            prompt=ctx.state.prompt,
            objective=task.item.objective,
            criteria=task.criteria(),
            selection=selection_format(hosted=ctx.state.prompt_cache),
            documents=render_documents(
                ctx.store.index(), current_round=ctx.round, caps=ctx.state.caps
            ),
            connections=render_connections(ctx.state.connections),
            learnings=render_list(ctx.learnings),
            forbidden=FORBIDDEN_TEXT,
            history=history,
            **values,
        )

    return fit_history(
        with_history,
        ctx.history(exclude_task=task.number),
        ctx.round,
        history_chars=ctx.state.caps.history_chars,
        limit=ctx.state.caps.prompt_chars,
    )


def selection_check(ctx: RoundContext, task: TaskState) -> Callable[[ActionSelection], Any]:
    """Stage 1's rules for a chosen action: in the task's catalog, references that resolve,
    a connection the user has. Refine's next action is held to the same rules."""
    names = set(choosable(ctx, task.item.taskType, task_tools(ctx, task), task.missing))
    labels = {c.label for c in ctx.state.connections}

    def check(selection: ActionSelection) -> ActionSelection:
        if selection.action not in names:
            raise Rejected(
                f"{selection.action!r} is not allowed for this task; choose one of: "
                + ", ".join(sorted(names))
            )
        try:
            resolve_references(selection.requiredInputDocuments, ctx.store.index())
        except ReferenceNotFound as error:
            valid = ", ".join(reference_choices(ctx.store.index())) or "none: leave it empty"
            raise Rejected(f"{error}; valid references: {valid}", kind="reference") from error
        if selection.requiredConnection and selection.requiredConnection not in labels:
            valid = ", ".join(sorted(labels)) or "none: use null"
            raise Rejected(
                f"{selection.requiredConnection!r} is not a connection label; valid: {valid}"
            )
        return selection

    return check


async def unavailable_step(
    ctx: RoundContext, step: Step, action: str, reason: str
) -> AsyncIterator[Event]:
    """The model chose an action that is not available here: nothing runs, the step fails
    with the reason, the action is not offered again in this task, and the answer names it;
    the next step chooses again."""
    task = step.task
    why = f"{action} is not available here: {reason}"
    task.missing[action] = reason
    ctx.add_learnings([why])
    observation = failed_observation(ctx, step, why)
    async for event in record_step(ctx, step, None, observation, status="failed", name=action):
        yield event
    yield ctx.status("info", why, task=task.number, action=step.action)
    yield ctx.end_step(step, reason=why)
