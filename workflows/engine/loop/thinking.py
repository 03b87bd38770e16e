"""Reasoning mode (seed 002): a self-looping chain of thought over a nested plan.

Documents the user attached are read first, as a visible document.extract step, and their
text reaches every thought; when they cannot be read, the thoughts are told why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from workflows.engine.loop.actions import (
    ActionCall,
    execute_action,
    find_tool,
    prepare_parameters,
    record_step,
)
from workflows.engine.loop.actions import failed_observation as not_run
from workflows.engine.loop.answer import unread_line
from workflows.engine.loop.core import CUT_SHORT_CODES, Out, RoundContext, TaskState
from workflows.engine.loop.defaults import DefaultsContext
from workflows.engine.loop.react import ask_to_continue, counted
from workflows.engine.model.calls import ask, with_cause
from workflows.engine.prompting.history import render_history
from workflows.engine.prompting.prompts import build, render_documents
from workflows.engine.records.events import (
    ActEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    PlanEvent,
    ThoughtEvent,
)
from workflows.engine.records.parts import PlanItem, TaskStatus
from workflows.engine.records.protocols import untrusted
from workflows.engine.records.schemas import (
    ActionSelection,
    Observation,
    PlanStep,
    TaskItem,
    Thought,
    as_objective,
    render_plan,
)

THOUGHTS_PER_STEP = 2
"""Reasoning allows this many thoughts per configured step before asking to continue."""
READER = "document.extract"


def pending_steps(steps: list[PlanStep]) -> list[str]:
    """The plan's steps still pending, sub-steps included (a step marked for verification
    counts as done: its mark says what to check)."""
    left: list[str] = []
    for step in steps:
        if step.status == "Pending":
            left.append(step.description)
        left += pending_steps(step.sub_steps or [])
    return left


def thoughts_text(thoughts: list[Thought]) -> str:
    """Earlier thoughts, oldest first, clipped."""
    if not thoughts:
        return "(none: this is the first thought; make the plan)"
    lines = []
    for number, thought in enumerate(thoughts, start=1):
        text = " ".join(thought.current_thinking.split())
        lines.append(f"Thought {number}: {text[:800]}")
    return "\n".join(lines)


async def run_reasoning(ctx: RoundContext) -> AsyncIterator[Event]:
    """Think until a thought says no further thought is needed; that thought is the answer."""
    item = TaskItem(
        objective=as_objective(ctx.state.prompt),
        successCriteria=["Every plan step is done and verified."],
        taskType="analysis",
    )
    task = TaskState(1, item)
    ctx.tasks = [task]
    yield ctx.task_event(task, "pending")
    yield ctx.task_event(task, "running")
    material: Out[str] = Out()
    async for event in read_attachments(ctx, task, material):
        yield event
    thoughts: list[Thought] = []
    limit = ctx.state.max_steps * THOUGHTS_PER_STEP
    while True:
        if stopped := ctx.budget_stop(task):
            yield stopped
            break
        if len(thoughts) >= limit:
            more: Out[int] = Out()
            question = f"Reasoning reached {counted(limit, 'thought')}. Continue thinking?"
            reason = f"The maximum of {counted(limit, 'thought')} was reached."
            async for event in ask_to_continue(ctx, task, len(thoughts), question, reason, more):
                yield event
            if not more.value:
                break
            limit += more.value * THOUGHTS_PER_STEP
        started, tokens, cost = ctx.clock(), ctx.budget.tokens, ctx.budget.cost
        calls = len(ctx.calls)
        messages = build(
            "thought",
            prompt=ctx.state.prompt,
            documents=material.value
            or render_documents(ctx.store.index(), current_round=ctx.round, caps=ctx.state.caps),
            history=render_history(
                ctx.history(), ctx.round, max_chars=ctx.state.caps.history_chars
            ),
            thoughts=thoughts_text(thoughts),
            plan=render_plan(thoughts[-1].planning) if thoughts else "(no plan yet)",
        )
        out: Out[Thought] = Out()
        async for event in ask(ctx, messages, output=Thought, kind="thought", out=out, task=1):
            yield event
        if out.value is None:
            task.stop_code = "step_failed"
            task.stop_reason = with_cause(
                f"Thought {len(thoughts) + 1} was invalid after one corrective retry", out.error
            )
            yield ctx.status("step_failed", task.stop_reason, task=1)
            break
        thought = out.value
        thoughts.append(thought)
        yield ThoughtEvent(
            round=ctx.round,
            task=1,
            number=len(thoughts),
            thinking=thought.current_thinking,
            planning=[PlanItem.of(step) for step in thought.planning],
            plan=render_plan(thought.planning),
            nextThoughtNeeded=thought.next_thought_needed,
            durationMs=int((ctx.clock() - started) * 1000),
            tokens=ctx.budget.tokens - tokens,
            cost=ctx.spent_since(cost, calls),
            model=ctx.llm.label,
        )
        if not thought.next_thought_needed:
            if left := pending_steps(thought.planning):  # it stopped, its plan says otherwise
                task.stop_code = "no_improvement"
                task.stop_reason = (
                    f"The reasoning ended with {counted(len(left), 'plan step')} not done: "
                    + "; ".join(left[:3])
                    + ("; …" if len(left) > 3 else "")
                    + "."
                )
            else:
                task.stop_code, task.stop_reason = "criteria_met", "Every plan step is done."
            yield ctx.status(task.stop_code, task.stop_reason, task=1)
            break
    async for event in conclude(ctx, task, thoughts):
        yield event


async def read_attachments(
    ctx: RoundContext, task: TaskState, out: Out[str]
) -> AsyncIterator[Event]:
    """Extract the documents attached to this round as a step; their text, fenced, for the
    thoughts (or why they could not be read). Nothing attached: nothing to do."""
    attached = [
        ref for ref in ctx.store.index() if ref.round == ctx.round and ref.source == "uploaded"
    ]
    if not attached:
        return
    index = render_documents(ctx.store.index(), current_round=ctx.round, caps=ctx.state.caps)
    step, opened = ctx.begin_step(task, 1, method=READER)
    yield opened
    tool = find_tool(ctx, READER)
    selection = ActionSelection(
        action=READER,
        actionObjective="Read the attached documents for the reasoning",
        requiredInputDocuments=[
            f"docList:{label}" for label in dict.fromkeys(a.label for a in attached)
        ],
    )
    if tool is None:
        reason = f"The attached documents cannot be read: {READER} is not available here."
        yield ErrorEvent(**step.position(), kind="tool", message=reason)
        observation = not_run(ctx, step, reason)
        async for event in record_step(ctx, step, None, observation, status="failed", name=READER):
            yield event
        yield ctx.end_step(step, reason=reason)
        out.value = f"{index}\n(The attached documents could not be read: {reason})"
        return
    yield PlanEvent(**step.position(), selection=selection, step=1)
    defaults = DefaultsContext(ctx.state.language, task.item.taskType, ctx.state.prompt)
    prepared = prepare_parameters(tool, {}, defaults)
    yield ActEvent(
        **step.position(),
        method=READER,
        parameters=prepared.values,
        defaultsApplied=prepared.applied,
        documents=selection.requiredInputDocuments,
    )
    call = ActionCall(
        name=READER,
        objective=selection.actionObjective,
        references=selection.requiredInputDocuments,
        connection=None,
        prepared=prepared,
    )
    observed: Out[Observation] = Out()
    async for event in execute_action(ctx, step, call, observed):
        yield event
    yield ctx.end_step(step)
    out.value = f"{index}\n{await extracted_text(ctx, observed.value)}"


async def extracted_text(ctx: RoundContext, observation: Observation | None) -> str:
    """The text the extraction produced, fenced and capped; or why there is none."""
    if observation is None or not observation.success:
        why = observation.error if observation else "the extraction did not run"
        return f"(The attached documents could not be read: {why})"
    limit = ctx.state.caps.final_context_chars
    parts: list[str] = []
    for ref in ctx.store.index():
        if ref.label == observation.resultLabel and limit > 0:
            text = (await ctx.store.read(ref)).decode("utf-8", "replace")[:limit]
            limit -= len(text)
            parts.append(untrusted(ref.name, text))
    return "\n".join(parts)


async def conclude(
    ctx: RoundContext, task: TaskState, thoughts: list[Thought]
) -> AsyncIterator[Event]:
    """The last thought is the solution; an unfinished chain says so (incomplete when a
    limit or a budget stopped it while its last thought asked for another)."""
    finished = task.stop_code == "criteria_met"
    cut_short = task.stop_code in CUT_SHORT_CODES and bool(thoughts)
    cut_short = cut_short and thoughts[-1].next_thought_needed
    if finished:
        solution = thoughts[-1].current_thinking
    elif task.stop_code == "no_improvement":  # its last word, and what it left undone
        solution = f"{thoughts[-1].current_thinking}\n\n**Not finished:** {task.stop_reason}"
    else:
        plan = (render_plan(thoughts[-1].planning) if thoughts else "") or "(no plan)"
        solution = f"I could not finish reasoning: {task.stop_reason}\n\nThe plan so far:\n{plan}"
    solution = unread_line(ctx) + solution  # attachments it could not read are said first
    status: TaskStatus = "success" if finished else "incomplete" if cut_short else "failed"
    yield ctx.task_event(task, status, task.stop_reason)
    key = f"round{ctx.round}_answer"
    yield DeltaEvent(round=ctx.round, key=key, text=solution, offset=0)
    yield MessageEvent(
        round=ctx.round,
        key=key,
        role="assistant",
        content=solution,
        summary=" ".join(solution.split())[:240],
        success=finished,
        status="completed" if finished else "failed",
    )
    ctx.outcome = ("completed", task.stop_reason) if finished else ("failed", task.stop_reason)
