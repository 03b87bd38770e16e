"""A round: the user's message → task plan → each task's loop and review → the final answer."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable

from . import actionplan, react, thinking
from .contracts import LLM, DocumentStore, ModelUnavailable, ToolExecutor, Usage, untrusted
from .controls import Controls
from .core import Out, Run, TaskRun, ask
from .events import (
    DeltaEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    ReviewEvent,
    RoundEvent,
    TaskEvent,
    TaskPlanEvent,
)
from .history import render_history
from .prompts import build, render_documents
from .schemas import TaskItem, TaskPlan, TaskReview
from .state import RoundState

MAX_TASKS = 5
BUDGET_CODES = {"token_budget", "time_budget"}


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
    run = Run(state, llm=llm, tools=tools, store=store, controls=controls, clock=clock)
    yield RoundEvent(round=run.round, status="started", mode=state.mode, model=llm.label)
    try:
        if state.mode == "reasoning":
            async for event in thinking.run_reasoning(run):
                yield event
        else:
            async for event in run_tasks(run):
                yield event
    except ModelUnavailable as error:
        reason = f"The model is unavailable: {error}"
        yield ErrorEvent(round=run.round, kind="model", message=reason)
        yield run.status("model_unavailable", reason)
        yield MessageEvent(
            round=run.round,
            key=f"round{run.round}_answer",
            role="assistant",
            content=f"I could not finish this request. {reason}",
            summary=reason[:240],
            success=False,
            status="failed",
        )
        run.outcome = ("failed", reason)
    status, reason = run.outcome
    yield RoundEvent(
        round=run.round,
        status="failed" if status == "failed" else "completed",
        mode=state.mode,
        model=llm.label,
        reason=reason,
        tokens=run.budget.tokens,
        durationMs=run.budget.elapsed_ms(),
    )


async def run_tasks(run: Run) -> AsyncIterator[Event]:
    """Plan the round into tasks, run each with its review, then answer."""
    planned: Out[TaskPlan] = Out()
    if run.budget.exhausted() is None:
        async for event in plan_tasks(run, planned):
            yield event
    fallback = TaskItem(objective=run.state.prompt, successCriteria=["The request is answered."])
    taskplan = planned.value or TaskPlan(tasks=[fallback])
    yield TaskPlanEvent(round=run.round, overview=taskplan.overview, tasks=taskplan.tasks)
    run.tasks = [TaskRun(n, item) for n, item in enumerate(taskplan.tasks[:MAX_TASKS], start=1)]
    for task in run.tasks:
        yield task_event(run, task, "pending")
    for task in run.tasks:
        if exhausted := run.budget.exhausted():
            task.stop_code, task.stop_reason = exhausted
            task.status = "failed"
            yield task_event(run, task, "failed", f"Not started: {exhausted[1]}")
            continue
        async for event in run_task(run, task):
            yield event
    failed = [t for t in run.tasks if t.status != "success"]
    if run.tasks and len(failed) == len(run.tasks):
        run.outcome = ("failed", "; ".join(f"Task {t.number}: {t.stop_reason}" for t in failed))
    else:
        run.outcome = ("completed", stop_summary(run))
    async for event in final_answer(run):
        yield event


def task_event(run: Run, task: TaskRun, status: str, reason: str = "") -> TaskEvent:
    """A task status change."""
    task.status = status
    return TaskEvent(
        round=run.round,
        task=task.number,
        status=status,  # type: ignore[arg-type]
        objective=task.item.objective,
        successCriteria=task.item.successCriteria,
        reason=reason,
        attempt=task.attempt,
    )


def stop_summary(run: Run) -> str:
    """Why each task stopped, in one line."""
    return "; ".join(f"Task {t.number} {t.status}: {t.stop_reason}" for t in run.tasks)


async def plan_tasks(run: Run, out: Out[TaskPlan]) -> AsyncIterator[Event]:
    """Split the round into tasks with success criteria."""
    messages = build(
        "taskplan",
        max_tasks=MAX_TASKS,
        prompt=run.state.prompt,
        documents=render_documents(run.store.index()),
        history=render_history(run.history(), run.round, max_chars=run.state.caps.history_chars),
    )
    async for event in ask(run, messages, output=TaskPlan, kind="taskplan", out=out):
        yield event


async def run_task(run: Run, task: TaskRun) -> AsyncIterator[Event]:
    """One task: its loop (React or Actionplan), then the review; retry while allowed."""
    loop = actionplan.run_task if run.state.mode == "actionplan" else react.run_task
    while True:
        yield task_event(run, task, "running")
        async for event in loop(run, task):
            yield event
        if task.stop_code in BUDGET_CODES:
            yield task_event(run, task, "failed", task.stop_reason)
            return
        reviewed: Out[TaskReview] = Out()
        async for event in review(run, task, reviewed):
            yield event
        verdict = reviewed.value or TaskReview(
            status="success" if task.stop_code == "criteria_met" else "failed",
            reason="No valid review after one corrective retry; judged by the stop reason.",
        )
        yield ReviewEvent(
            round=run.round,
            task=task.number,
            status=verdict.status,
            reason=verdict.reason,
            improvements=verdict.improvements,
            metCriteria=verdict.metCriteria,
            retries=task.attempt - 1,
        )
        if verdict.status == "retry" and task.attempt <= run.state.max_task_retries:
            run.add_learnings([f"Improve: {text}" for text in verdict.improvements])
            yield task_event(run, task, "retry", verdict.reason)
            task.attempt += 1
            continue
        status = "success" if verdict.status == "success" else "failed"
        reason = verdict.reason or task.stop_reason
        if verdict.status == "retry":
            reason = f"Retries used up: {reason}"
        yield task_event(run, task, status, reason)
        return


async def review(run: Run, task: TaskRun, out: Out[TaskReview]) -> AsyncIterator[Event]:
    """The task review: success, retry or failed, with improvements."""
    messages = build(
        "review",
        objective=task.item.objective,
        criteria=task.criteria(),
        steps=task.steps_text(latest_observation=True),
        stopped=f"{task.stop_code}: {task.stop_reason}",
    )
    async for event in ask(
        run, messages, output=TaskReview, kind="review", out=out, task=task.number
    ):
        yield event


# --- The final answer -------------------------------------------------------------------------


def outcome_text(run: Run) -> str:
    """What each task did, one block per task."""
    if not run.tasks:
        return "No actions were needed."
    blocks = []
    for task in run.tasks:
        head = f"Task {task.number} ({task.status}): {task.item.objective}"
        if task.stop_reason:
            head += f" — stopped: {task.stop_reason}"
        blocks.append("\n".join([head, *(f"  {step.line()}" for step in task.steps)]))
    return "\n".join(blocks)


def results_text(run: Run) -> str:
    """Document previews and web findings of every step, fenced and capped."""
    parts: list[str] = []
    for task in run.tasks:
        for step in task.steps:
            obs = step.observation
            lines = [f"{p.name}: {p.snippet}" for p in obs.previews]
            lines += [
                f"{f.title or f.url} ({f.url}): {' '.join(f.keyPoints)}" for f in obs.findings
            ]
            if lines:
                parts.append(untrusted(obs.resultLabel, "\n".join(lines)))
    text = "\n".join(parts) or "(no results)"
    limit = run.state.caps.final_context_chars
    return text if len(text) <= limit else text[: limit - 1] + "…"


def produced_documents(run: Run) -> list[str]:
    """docItem references of the documents this round produced."""
    return [
        f"docItem:{ref.id}:{ref.name}"
        for ref in run.store.index()
        if ref.round == run.round and ref.source != "uploaded"
    ]


async def final_answer(run: Run) -> AsyncIterator[Event]:
    """Stream the final answer token by token, then emit it whole as a message."""
    key = f"round{run.round}_answer"
    documents = produced_documents(run)
    if exhausted := run.budget.exhausted():
        text = f"I stopped early: {exhausted[1]}\n\n{outcome_text(run)}"
        if documents:
            text += "\n\nDocuments: " + ", ".join(documents)
        yield DeltaEvent(round=run.round, key=key, text=text, offset=0)
    else:
        messages = build(
            "final",
            language=run.state.language,
            prompt=run.state.prompt,
            outcome=outcome_text(run),
            results=results_text(run),
        )
        text = ""
        async for piece in run.llm.stream_text(messages, kind="final"):
            if isinstance(piece, Usage):
                yield run.usage(piece)
            elif piece:
                yield DeltaEvent(round=run.round, key=key, text=piece, offset=len(text))
                text += piece
    yield MessageEvent(
        round=run.round,
        key=key,
        role="assistant",
        content=text,
        summary=first_sentence(text),
        documents=documents,
        success=run.outcome[0] != "failed",
        learnings=run.learnings,
        status=run.outcome[0],
    )


def first_sentence(text: str, limit: int = 240) -> str:
    """The answer's first sentence, as its summary."""
    plain = " ".join(re.sub(r"[#*_`>]", "", text).split())
    sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
