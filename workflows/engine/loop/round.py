"""A round: the user's message → task plan → each task's loop and review → the final answer."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Literal

from workflows.engine.loop import actionplan, react, thinking
from workflows.engine.loop.answer import (
    answer_key,
    final_answer,
    unavailable_answer,
)
from workflows.engine.loop.closing import OpenWork
from workflows.engine.loop.controls import Controls
from workflows.engine.loop.core import BUDGET_CODES, Out, Rejected, RoundContext, TaskState
from workflows.engine.loop.cutoff import budget_closing
from workflows.engine.loop.deadline import TimeBudgetSpent
from workflows.engine.loop.guards import allowed_tools
from workflows.engine.loop.titles import unwritten_titles
from workflows.engine.model.calls import ask, rejected_proposal, with_cause
from workflows.engine.prompting.catalog import catalog_check, task_catalog
from workflows.engine.prompting.history import render_history
from workflows.engine.prompting.narrowed import review_output, taskplan_output
from workflows.engine.prompting.prompts import (
    build,
    plan_format,
    render_connections,
    render_documents,
    selection_format,
)
from workflows.engine.prompting.ranking import CatalogView, task_view
from workflows.engine.prompting.selection import (
    answer_rule,
    answers_with_review,
    choosable,
    schema_references,
    unavailable_actions,
)
from workflows.engine.prompting.shared import FIRST_ACTION, MAX_TASKS, PLAN
from workflows.engine.records.events import (
    ErrorEvent,
    Event,
    MessageEvent,
    ReviewEvent,
    RoundEvent,
    TaskPlanEvent,
)
from workflows.engine.records.parts import TaskStatus
from workflows.engine.records.protocols import LLM, DocumentStore, ModelUnavailable, ToolExecutor
from workflows.engine.records.schemas import (
    ActionPlan,
    TaskItem,
    TaskPlan,
    TaskReview,
    as_objective,
)
from workflows.engine.records.state import RoundState


async def run_round(
    state: RoundState,
    *,
    llm: LLM,
    tools: ToolExecutor,
    store: DocumentStore,
    controls: Controls,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[Event]:
    """Run one round and yield every event; the host stores and broadcasts them in order."""
    ctx = RoundContext(state, llm=llm, tools=tools, store=store, controls=controls, clock=clock)
    yield RoundEvent(round=ctx.round, status="started", mode=state.mode, model=llm.label)
    opened = OpenWork()
    try:
        mode = thinking.run_reasoning(ctx) if state.mode == "reasoning" else run_tasks(ctx)
        async for event in mode:
            opened.add(event)
            yield event
    except ModelUnavailable as error:
        # One message for the failure: the error says what failed and what to fix.
        reason = str(error)  # the status and the answer say it too, in words for everyone
        yield ErrorEvent(round=ctx.round, kind="model", message=reason, detail=error.detail)
        closing = opened.closing("failed", reason)
        for event in closing:  # a partial answer among them keeps what was written, and why
            if isinstance(event, MessageEvent) and event.key == answer_key(ctx):
                cut = f"{event.content.rstrip()}\n\nI could not finish this answer. {reason}"
                event = event.model_copy(update={"content": cut.lstrip()})
            yield event
        if not any(isinstance(e, MessageEvent) and e.key == answer_key(ctx) for e in closing):
            yield unavailable_answer(ctx, reason)
        ctx.outcome = ("failed", reason)
    except TimeBudgetSpent as spent:  # cut during a model call: ends as a spent budget does
        for event in budget_closing(ctx, opened, spent.reason):
            yield event
    status, reason = ctx.outcome
    yield RoundEvent(
        round=ctx.round,
        status="failed" if status == "failed" else "completed",
        mode=state.mode,
        model=llm.label,
        reason=reason,
        tokens=ctx.budget.tokens,
        cachedTokens=ctx.cached_tokens,
        cost=ctx.round_cost(),
        durationMs=ctx.budget.elapsed_ms(),
    )


async def run_tasks(ctx: RoundContext) -> AsyncIterator[Event]:
    """Plan the round into tasks, run each with its review, then answer."""
    planned: Out[TaskPlan] = Out()
    if ctx.budget.exhausted() is None:
        async for event in plan_tasks(ctx, planned):
            yield event
    fallback = TaskItem(
        objective=as_objective(ctx.state.prompt), successCriteria=["The request is answered."]
    )
    taskplan = planned.value or TaskPlan(tasks=[fallback])
    if taskplan.approach == "direct":
        taskplan = taskplan.model_copy(update={"tasks": [], "firstAction": None})
    yield TaskPlanEvent(round=ctx.round, overview=taskplan.overview, tasks=taskplan.tasks)
    ctx.tasks = [TaskState(n, item) for n, item in enumerate(taskplan.tasks[:MAX_TASKS], start=1)]
    for task in ctx.tasks:
        yield ctx.task_event(task, "pending")
    if rejected := adopt_first_action(ctx, taskplan):
        yield rejected
    if len(ctx.tasks) == 1 and (plan := getattr(taskplan, "plan", None)):
        ctx.tasks[0].planned = ActionPlan(actions=plan)  # checked when the task starts
    for task in ctx.tasks:
        if exhausted := ctx.budget.exhausted():
            task.stop_code, task.stop_reason = exhausted
            yield ctx.task_event(task, "skipped", f"Not started: {exhausted[1]}")
            continue
        async for event in run_task(ctx, task):
            yield event
    ctx.outcome = round_outcome(ctx)
    async for event in final_answer(ctx):
        yield event


def round_outcome(ctx: RoundContext) -> tuple[str, str]:
    """Completed only when every task succeeded; otherwise failed, saying which did not (and
    that work was left, when every one of them was cut short with work left)."""
    failed = [t for t in ctx.tasks if t.status != "success"]
    if not failed:
        return "completed", stop_summary(ctx)
    unfinished = all(t.status == "incomplete" for t in failed)
    head = f"{len(failed)} of {len(ctx.tasks)} tasks " + (
        "were not finished" if unfinished else "did not succeed"
    )
    if len(ctx.tasks) == 1:
        head = "The task was not finished" if unfinished else "The task did not succeed"
    parts = [f"Task {t.number}: {t.failure or t.stop_reason or t.status}" for t in failed]
    joined = parts[0] if len(parts) == 1 else "; ".join(part.rstrip(".") for part in parts)
    return "failed", f"{head}: {joined}"


def stop_summary(ctx: RoundContext) -> str:
    """Why each task stopped, in one line."""
    parts = [f"Task {t.number} {t.status}: {t.stop_reason}" for t in ctx.tasks]
    return parts[0] if len(parts) == 1 else "; ".join(part.rstrip(".") for part in parts)


async def plan_tasks(ctx: RoundContext, out: Out[TaskPlan]) -> AsyncIterator[Event]:
    """Split the round into tasks with success criteria; in React mode the plan may carry the
    first task's first action (one call fewer: its Stage 1), in Actionplan mode the action
    list of a round's only task (one call fewer: its Actionplan call)."""
    react = ctx.state.mode == "react"
    planning = plan_size(ctx)
    view = taskplan_view(ctx)
    messages = build(
        "taskplan",
        purposes=ctx.layout("taskplan") == "narrow",
        tools=view.shown,  # a large catalog cut for the request, as Stage 1 cuts it for a task
        unavailable=unavailable_actions(ctx, "general"),
        max_tasks=MAX_TASKS,
        prompt=ctx.state.prompt,
        connections=render_connections(ctx.state.connections),
        documents=render_documents(ctx.store.index(), current_round=ctx.round, caps=ctx.state.caps),
        history=render_history(ctx.history(), ctx.round, max_chars=ctx.state.caps.history_chars),
        first_action=first_action_line(react, planning),
        first_action_rule=(
            selection_format(hosted=ctx.state.prompt_cache)
            if react
            else "Each action of a plan has these keys:\n"
            + plan_format(round=ctx.round, task=1, first_action=1)
            if planning
            else ""
        ),
    )
    output = taskplan_output_for(ctx, view)
    now = FIRST_ACTION if react else ""
    if planning:
        now = f"{PLAN}: at most {planning} actions, round {ctx.round}, task 1, numbered from 1."
    async for event in ask(ctx, messages, output=output, kind="taskplan", out=out, now=now):
        yield event


def plan_size(ctx: RoundContext) -> int:
    """Actionplan mode: the most actions the task plan's action list may hold; else 0."""
    return ctx.state.max_steps if ctx.state.mode == "actionplan" else 0


def taskplan_view(ctx: RoundContext) -> CatalogView:
    """The catalog as the task plan lists it (cut for the request when it is large)."""
    return task_view(
        allowed_tools(ctx.state.policy, "general", ctx.tools.tools()),
        ctx.state.prompt,
        cached=ctx.state.prompt_cache,
    )


def taskplan_output_for(ctx: RoundContext, view: CatalogView) -> type[TaskPlan]:
    """The task plan's answer for this round: its first action narrowed like Stage 1's (the
    name free when the catalog is cut); a task is needed when the user attached documents."""
    attached = [r for r in ctx.store.index() if r.round == ctx.round and r.source == "uploaded"]
    return taskplan_output(
        MAX_TASKS,
        ctx.state.mode == "react",
        choosable(ctx, "general", view.shown) if not view.hidden else (),
        schema_references(ctx),
        tuple(c.label for c in ctx.state.connections),
        direct=not attached,
        plan=plan_size(ctx),
    )


def first_action_line(react: bool, planning: int) -> str:
    """The task plan's key for the work it may start: React's first action, Actionplan's
    action list of a single task, or no first action."""
    if react:
        return (
            '- "firstAction": the first action of task 1, as an action is written below; null '
            "when there are no tasks."
        )
    if planning:
        return (
            '- "plan": with exactly one task, its whole action list upfront (at most '
            f"{planning} actions of the Catalog, each with its business parameters), each "
            "action written as below; null when there are no tasks or several."
        )
    return '- "firstAction": null.'


def adopt_first_action(ctx: RoundContext, plan: TaskPlan) -> ErrorEvent | None:
    """The plan's first action becomes task 1's first step when it passes Stage 1's checks;
    otherwise the error says why and Stage 1 chooses."""
    if plan.firstAction is None or not ctx.tasks or ctx.state.mode != "react":
        return None
    task = ctx.tasks[0]
    try:
        view = task_catalog(ctx, task)  # a catalog.search is answered by the first Stage 1
        task.proposed = catalog_check(ctx, task, view, searching=True)(plan.firstAction)
    except Rejected as error:
        what = "The first action proposed with the task plan"
        return rejected_proposal(ctx, task.number, error, what, "Stage 1 chooses instead.")
    return None


async def run_task(ctx: RoundContext, task: TaskState) -> AsyncIterator[Event]:
    """One task: its loop (React or Actionplan), then the review; retry while allowed."""
    loop = actionplan.run_task if ctx.state.mode == "actionplan" else react.run_task
    while True:
        yield ctx.task_event(task, "running")
        async for event in loop(ctx, task):
            yield event
        if task.stop_code in BUDGET_CODES:  # no review call: the budget is spent
            unfinished = task.cut_short()
            task.failure = task.unfinished_reason() if unfinished else task.stop_reason
            yield ctx.task_event(task, "incomplete" if unfinished else "failed", task.failure)
            return
        unwritten = await unwritten_titles(ctx) if task is ctx.tasks[-1] else []
        if task.stop_code == "criteria_met" and not task.facts() and not unwritten:
            verdict = settled_by_refine(task)  # nothing a review could add
        else:
            reviewed: Out[TaskReview] = Out()
            async for event in review(ctx, task, reviewed):
                yield event
            verdict = grounded(task, reviewed.value, reviewed.error, unwritten)
            if verdict.status == "success" and answers_with_review(ctx):  # the review's answer
                task.answer = (getattr(reviewed.value, "answer", None) or "").strip()
        retrying = verdict.status == "retry" and task.attempt <= ctx.state.max_task_retries
        unfinished = task.cut_short() and not retrying  # the agent said work was left
        yield ReviewEvent(
            round=ctx.round,
            task=task.number,
            status="incomplete" if unfinished else verdict.status,
            reason=task.unfinished_reason() if unfinished else verdict.reason,
            improvements=verdict.improvements,
            metCriteria=verdict.metCriteria,
            retries=task.attempt - 1,
        )
        if retrying:
            ctx.add_learnings([f"Improve: {text}" for text in verdict.improvements])
            yield ctx.task_event(task, "retry", verdict.reason)
            task.attempt, task.answer, task.unfinished = task.attempt + 1, "", ""
            continue
        status: TaskStatus = "success" if verdict.status == "success" else "failed"
        reason = verdict.reason or task.stop_reason
        if verdict.status == "retry":
            reason = f"Retries used up: {reason}"
        if unfinished:
            status, reason = "incomplete", task.unfinished_reason()
            task.failure = reason
        elif status == "failed":  # the same reason the round and its answer give
            reason = task.failure = task.failure_reason(reason)
        yield ctx.task_event(task, status, reason)
        return


def settled_by_refine(task: TaskState) -> TaskReview:
    """The verdict when refine stopped with every criterion met and the steps bear it out
    (an action succeeded, the last one too): success, without a review call."""
    last = task.steps[-1]
    return TaskReview(
        status="success",
        reason=f"Criteria met after {last.name} succeeded: {task.stop_reason}".rstrip(": "),
        metCriteria=list(task.item.successCriteria),
    )


def grounded(
    task: TaskState, review: TaskReview | None, error: str = "", unwritten: Sequence[str] = ()
) -> TaskReview:
    """The review checked against what happened: it may turn a success into a failure or a
    retry, never a failure into a success (`unwritten`: titles of documents the request asks
    for that the round has not written). A task cut short with work left is incomplete
    whatever the review says: see `run_task`."""
    unsupported = task.facts()
    if not unsupported and unwritten:
        unsupported = f"no document titled “{unwritten[0]}” was written"
    if review is None:  # `error`: why the model gave none
        met = task.stop_code == "criteria_met" and not unsupported
        status: Literal["success", "failed"] = "success" if met else "failed"
        reason = "No valid review after one corrective retry"
        reason = with_cause(reason, error).rstrip(".") + "; judged by what the steps did"
        return TaskReview(
            status=status, reason=f"{reason}{': ' + unsupported if unsupported else '.'}"
        )
    if review.status == "success" and unsupported:
        return review.model_copy(
            update={
                "status": "failed",
                "reason": f"Not done: {unsupported}, although the review judged it a success.",
                "metCriteria": [],
            }
        )
    return review


async def review(ctx: RoundContext, task: TaskState, out: Out[TaskReview]) -> AsyncIterator[Event]:
    """The task review: success, retry or failed, with improvements; in an Actionplan round of
    one task, with success it also writes the answer to the user."""
    answering = answers_with_review(ctx)
    shared = ctx.layout("review") == "shared"  # the head every call shares holds the catalog
    messages = build(
        "review",
        tools=task_catalog(ctx, task).shown if shared else None,
        unavailable=unavailable_actions(ctx, task.item.taskType) if shared else None,
        request=f"## User request\n{ctx.state.prompt}\n\n" if answering else "",
        objective=task.item.objective,
        criteria=task.criteria(),
        steps=task.steps_text(latest_observation=True),
        stopped=f"{task.stop_code}: {task.stop_reason}",
        answer=answer_rule(ctx, 'with "success"') if answering else "",
    )
    output = review_output(tuple(task.item.successCriteria), answering=answering)
    async for event in ask(
        ctx,
        messages,
        output=output,
        kind="review",
        out=out,
        task=task.number,
        key=answer_key(ctx) if answering else "",
    ):
        yield event
