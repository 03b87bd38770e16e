"""Reasoning mode (seed 002): a self-looping chain of thought over a nested plan."""

from __future__ import annotations

from collections.abc import AsyncIterator

from .core import Out, Run, TaskRun, ask
from .events import AskEvent, DeltaEvent, Event, MessageEvent, TaskEvent, ThoughtEvent
from .history import render_history
from .prompts import build
from .schemas import TaskItem, Thought, render_plan

THOUGHTS_PER_STEP = 2
"""Reasoning allows this many thoughts per configured step before asking to continue."""


def thoughts_text(thoughts: list[Thought]) -> str:
    """Earlier thoughts, oldest first, clipped."""
    if not thoughts:
        return "(none: this is the first thought; make the plan)"
    lines = []
    for number, thought in enumerate(thoughts, start=1):
        text = " ".join(thought.current_thinking.split())
        lines.append(f"Thought {number}: {text[:800]}")
    return "\n".join(lines)


async def run_reasoning(run: Run) -> AsyncIterator[Event]:
    """Think until a thought says no further thought is needed; that thought is the answer."""
    item = TaskItem(
        objective=run.state.prompt,
        successCriteria=["Every plan step is done and verified."],
        taskType="analysis",
    )
    task = TaskRun(1, item)
    run.tasks = [task]
    yield task_status(run, task, "pending")
    yield task_status(run, task, "running")
    thoughts: list[Thought] = []
    limit = run.state.max_steps * THOUGHTS_PER_STEP
    while True:
        if exhausted := run.budget.exhausted():
            task.stop_code, task.stop_reason = exhausted
            yield run.status(*exhausted, task=1)
            break
        if len(thoughts) >= limit:
            question = f"Reasoning reached {limit} thoughts. Continue thinking?"
            yield AskEvent(round=run.round, task=1, question=question, stepsDone=len(thoughts))
            more = await run.controls.ask_continue(task=1, steps_done=len(thoughts))
            if more <= 0:
                task.stop_code = "max_steps"
                task.stop_reason = f"The maximum of {limit} thoughts was reached."
                yield run.status("max_steps", task.stop_reason, task=1)
                break
            limit += more * THOUGHTS_PER_STEP
        started, tokens = run.clock(), run.budget.tokens
        messages = build(
            "thought",
            prompt=run.state.prompt,
            history=render_history(
                run.history(), run.round, max_chars=run.state.caps.history_chars
            ),
            thoughts=thoughts_text(thoughts),
            plan=render_plan(thoughts[-1].planning) if thoughts else "(no plan yet)",
        )
        out: Out[Thought] = Out()
        async for event in ask(run, messages, output=Thought, kind="thought", out=out, task=1):
            yield event
        if out.value is None:
            task.stop_code = "step_failed"
            task.stop_reason = (
                f"Thought {len(thoughts) + 1} was invalid after one corrective retry."
            )
            yield run.status("step_failed", task.stop_reason, task=1)
            break
        thought = out.value
        thoughts.append(thought)
        yield ThoughtEvent(
            round=run.round,
            task=1,
            number=len(thoughts),
            thinking=thought.current_thinking,
            planning=thought.planning,
            plan=render_plan(thought.planning),
            nextThoughtNeeded=thought.next_thought_needed,
            durationMs=int((run.clock() - started) * 1000),
            tokens=run.budget.tokens - tokens,
        )
        if not thought.next_thought_needed:
            task.stop_code, task.stop_reason = "criteria_met", "The plan is complete."
            yield run.status("criteria_met", task.stop_reason, task=1)
            break
    async for event in conclude(run, task, thoughts):
        yield event


def task_status(run: Run, task: TaskRun, status: str, reason: str = "") -> TaskEvent:
    """The reasoning task's status change."""
    task.status = status
    return TaskEvent(
        round=run.round,
        task=1,
        status=status,  # type: ignore[arg-type]
        objective=task.item.objective,
        successCriteria=task.item.successCriteria,
        reason=reason,
    )


async def conclude(run: Run, task: TaskRun, thoughts: list[Thought]) -> AsyncIterator[Event]:
    """The last thought is the solution; an unfinished chain says so."""
    finished = task.stop_code == "criteria_met"
    if finished:
        solution = thoughts[-1].current_thinking
    else:
        plan = render_plan(thoughts[-1].planning) if thoughts else "(no plan)"
        solution = f"I could not finish reasoning: {task.stop_reason}\n\nThe plan so far:\n{plan}"
    yield task_status(run, task, "success" if finished else "failed", task.stop_reason)
    key = f"round{run.round}_answer"
    yield DeltaEvent(round=run.round, key=key, text=solution, offset=0)
    yield MessageEvent(
        round=run.round,
        key=key,
        role="assistant",
        content=solution,
        summary=" ".join(solution.split())[:240],
        success=finished,
        status="completed" if finished else "failed",
    )
    run.outcome = ("completed", task.stop_reason) if finished else ("failed", task.stop_reason)
