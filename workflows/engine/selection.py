"""What Stage 1 and Actionplan's planning share: the task's catalog and the prompt around it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .contracts import Message, ReferenceNotFound, Tool, resolve_references
from .core import Rejected, RoundContext, TaskState
from .guards import allowed_tools
from .prompts import (
    build,
    fit_history,
    render_connections,
    render_documents,
    render_list,
    selection_format,
)
from .schemas import FORBIDDEN_PARAMETER_NAMES, ActionSelection

FORBIDDEN_TEXT = ", ".join(sorted(FORBIDDEN_PARAMETER_NAMES))


def task_tools(ctx: RoundContext, task: TaskState) -> list[Tool]:
    """The actions this task may use, in catalog order."""
    return allowed_tools(ctx.state.policy, task.item.taskType, ctx.tools.tools())


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
            tools=tools,
            prompt=ctx.state.prompt,
            objective=task.item.objective,
            criteria=task.criteria(),
            selection=selection_format(),
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
    names = {tool.name for tool in task_tools(ctx, task)}
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
            raise Rejected(str(error), kind="reference") from error
        if selection.requiredConnection and selection.requiredConnection not in labels:
            raise Rejected(f"{selection.requiredConnection!r} is not a connection label")
        return selection

    return check
