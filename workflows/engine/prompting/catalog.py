"""The catalog a task's selections see (cut for the task when it is large, see ranking.py),
and Stage 1 answering the model's catalog searches before it chooses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from workflows.engine.loop.core import Out, Rejected, RoundContext, Step, TaskState
from workflows.engine.model.calls import ask
from workflows.engine.prompting import ranking
from workflows.engine.prompting.ranking import (
    SEARCH_ACTION,
    CatalogView,
    search,
    search_answer,
    task_view,
)
from workflows.engine.prompting.selection import (
    selection_check,
    selection_messages,
    selection_output_for,
    task_tools,
)
from workflows.engine.records.events import Event
from workflows.engine.records.protocols import Message
from workflows.engine.records.schemas import ActionSelection


def task_query(ctx: RoundContext, task: TaskState) -> str:
    """What the task's tools are matched against: the request, the objective, the criteria."""
    return f"{ctx.state.prompt}\n{task.item.objective}\n{task.criteria()}"


def task_catalog(ctx: RoundContext, task: TaskState) -> CatalogView:
    """The task's catalog as its selections list it (the same view for every call of the
    task, so the system message stays byte-identical)."""
    return task_view(task_tools(ctx, task), task_query(ctx, task), cached=ctx.state.prompt_cache)


def catalog_check(
    ctx: RoundContext, task: TaskState, view: CatalogView, *, searching: bool
) -> Callable[[ActionSelection], ActionSelection]:
    """Stage 1's rules (selection_check), with `catalog.search` allowed while `searching` and
    the catalog hides tools. A hidden tool of the task is as valid as a listed one."""
    check = selection_check(ctx, task)
    allowed = {tool.name for tool in task_tools(ctx, task)}

    def checked(selection: ActionSelection) -> ActionSelection:
        if selection.action == SEARCH_ACTION and view.hidden:
            if not searching:
                raise Rejected(f"no more {SEARCH_ACTION}: choose an action of the catalog")
            return selection
        if view.hidden and selection.action not in allowed:
            listed = sorted(tool.name for tool in view.shown)
            raise Rejected(
                f"{selection.action!r} is not allowed for this task; choose one of: "
                + ", ".join(listed)
                + f" (or {SEARCH_ACTION} to find the tools not listed)"
            )
        checked_selection: ActionSelection = check(selection)
        return checked_selection

    return checked


def planned_search(view: CatalogView, words: str) -> Rejected:
    """A plan cannot wait for a search: a planned `catalog.search` is rejected with the best
    matches, which the plan's one corrective retry then reads."""
    found = search(view, words)
    answer = search_answer(view, words.strip(), found, last=True)
    return Rejected(f"{SEARCH_ACTION} does not run inside a plan. {answer}")


async def select(
    ctx: RoundContext,
    step: Step,
    out: Out[ActionSelection],
    *,
    proposed_search: ActionSelection | None = None,
) -> AsyncIterator[Event]:
    """Stage 1: choose an action. When the model (or refine's proposal, `proposed_search`)
    asks for `catalog.search`, the best matches are appended to the same conversation and it
    chooses again: the prompt before them stays a cacheable prefix."""
    task = step.task
    view = task_catalog(ctx, task)
    messages = selection_messages(ctx, task, "select", tools=view.shown, steps=task.steps_text())
    answer: ActionSelection | None = proposed_search
    limit = ranking.DEFAULT.searches
    for searches in range(limit + 1):
        if answer is not None and answer.action != SEARCH_ACTION:
            out.value = answer
            return
        if answer is not None and view.hidden:
            words = answer.actionObjective.strip()
            found = search(view, words)
            names = ", ".join(tool.name for tool in found) or "no match; every unlisted tool named"
            yield ctx.status(
                "info", f"Searched the catalog for {words[:200]!r}: {names}.", task=task.number
            )
            last = searches == limit
            messages = [
                *messages,
                {"role": "assistant", "content": answer.model_dump_json(exclude_defaults=True)},
                _user(search_answer(view, words, found, last=last)),
            ]
        chosen: Out[ActionSelection] = Out()
        async for event in ask(
            ctx,
            messages,
            output=selection_output_for(ctx, task, actions=not view.hidden),
            kind="select",
            out=chosen,
            check=catalog_check(ctx, task, view, searching=searches < limit),
            task=task.number,
            action=step.action,
        ):
            yield event
        if chosen.value is None:
            out.error = chosen.error
            return
        answer = chosen.value
    out.value = answer


def _user(text: str) -> Message:
    return {"role": "user", "content": text}
