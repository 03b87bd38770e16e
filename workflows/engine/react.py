"""React mode: per task, select → set parameters → act → observe → refine, until a stop."""

from __future__ import annotations

from collections.abc import AsyncIterator

from .actions import (
    ActionCall,
    Prepared,
    execute_action,
    failed_observation,
    find_tool,
    prepare_parameters,
    record_step,
    task_text,
)
from .contracts import Message, ReferenceNotFound, resolve_references
from .core import Out, Rejected, Run, TaskRun, ask
from .defaults import DefaultsContext
from .events import ActEvent, AskEvent, Event, PlanEvent, RefineEvent
from .guards import allowed_tools
from .prompts import (
    build,
    fit_history,
    parameters_prompt,
    reconcile_schema,
    render_catalog,
    render_connections,
    render_documents,
    render_list,
    render_observation,
)
from .schemas import ActionParameters, ActionSelection, Observation, RefinementDecision


async def run_task(run: Run, task: TaskRun) -> AsyncIterator[Event]:
    """The loop: one action per step until refine stops it, or a limit does."""
    limit, steps = run.state.max_steps, 0
    while True:
        if exhausted := run.budget.exhausted():
            task.stop_code, task.stop_reason = exhausted
            yield run.status(*exhausted, task=task.number)
            return
        if steps >= limit:
            question = f"Task {task.number} reached {limit} steps. Continue for more steps?"
            yield AskEvent(round=run.round, task=task.number, question=question, stepsDone=steps)
            more = await run.controls.ask_continue(task=task.number, steps_done=steps)
            if more <= 0:
                task.stop_code = "max_steps"
                task.stop_reason = f"The maximum of {limit} steps was reached."
                yield run.status(task.stop_code, task.stop_reason, task=task.number)
                return
            limit += more
            yield run.status("info", f"Continuing for {more} more step(s).", task=task.number)
        steps += 1
        started, tokens = run.clock(), run.budget.tokens
        number = task.next_action()

        selection: Out[ActionSelection] = Out()
        async for event in plan(run, task, number, steps, selection):
            yield event
        prepared: Out[Prepared] = Out()
        if selection.value is not None:
            async for event in act(run, task, number, selection.value, prepared):
                yield event
        if selection.value is None or prepared.value is None:
            stage = "action selection" if selection.value is None else "parameters"
            reason = f"Step {steps} failed: no valid {stage} after one corrective retry."
            name = selection.value.action if selection.value else ""
            observation = failed_observation(run, task, number, reason)
            async for event in record_step(
                run, task, number, None, observation, status="failed", name=name
            ):
                yield event
            task.stop_code, task.stop_reason = "step_failed", reason
            yield run.status("step_failed", reason, task=task.number, action=number)
            return

        observed: Out[Observation] = Out()
        call = ActionCall(
            name=selection.value.action,
            objective=selection.value.actionObjective,
            references=selection.value.requiredInputDocuments,
            connection=selection.value.requiredConnection,
            prepared=prepared.value,
            learnings=selection.value.learnings,
        )
        async for event in execute_action(run, task, number, call, observed):
            yield event

        decision: Out[RefinementDecision] = Out()
        async for event in refine(run, task, number, decision):
            yield event
        verdict = decision.value or RefinementDecision(
            decision="stop", reason="No valid refinement decision after one corrective retry."
        )
        yield RefineEvent(
            round=run.round,
            task=task.number,
            action=number,
            decision=verdict.decision,
            reason=verdict.reason,
            criteriaMet=verdict.criteriaMet,
            nextHint=verdict.nextHint,
            durationMs=int((run.clock() - started) * 1000),
            tokens=run.budget.tokens - tokens,
        )
        if verdict.decision == "stop":
            code = "criteria_met" if verdict.criteriaMet else "no_improvement"
            if decision.value is None:
                code = "step_failed"
            task.stop_code, task.stop_reason = code, verdict.reason
            reason = verdict.reason or code.replace("_", " ")
            yield run.status(code, reason, task=task.number, action=number)
            return
        if verdict.nextHint:
            run.add_learnings([f"Next: {verdict.nextHint}"])


async def plan(
    run: Run, task: TaskRun, number: int, step: int, out: Out[ActionSelection]
) -> AsyncIterator[Event]:
    """Stage 1: select one action and its references; no parameter values."""
    notes = run.controls.steering()
    if notes:
        run.add_learnings([f"User note: {note}" for note in notes])
        yield run.status(
            "info", "Steering note(s) received: " + " | ".join(notes), task=task.number
        )
    tools = allowed_tools(run.state.policy, task.item.taskType, run.tools.tools())
    names = {tool.name for tool in tools}
    labels = {c.label for c in run.state.connections}
    index = run.store.index()

    def check(selection: ActionSelection) -> ActionSelection:
        if selection.action not in names:
            raise Rejected(
                f"{selection.action!r} is not allowed for this task; choose one of: "
                + ", ".join(sorted(names))
            )
        try:
            resolve_references(selection.requiredInputDocuments, index)
        except ReferenceNotFound as error:
            raise Rejected(str(error), kind="reference") from error
        if selection.requiredConnection and selection.requiredConnection not in labels:
            raise Rejected(f"{selection.requiredConnection!r} is not a connection label")
        return selection

    def with_history(history: str) -> list[Message]:
        return build(
            "select",
            prompt=run.state.prompt,
            objective=task.item.objective,
            criteria=task.criteria(),
            catalog=render_catalog(tools),
            documents=render_documents(index),
            connections=render_connections(run.state.connections),
            learnings=render_list(run.learnings),
            steps=task.steps_text(),
            history=history,
        )

    messages = fit_history(
        with_history,
        run.history(exclude_task=task.number),
        run.round,
        history_chars=run.state.caps.history_chars,
        limit=run.state.caps.prompt_chars,
    )
    async for event in ask(
        run,
        messages,
        output=ActionSelection,
        kind="select",
        out=out,
        check=check,
        task=task.number,
        action=number,
    ):
        yield event
    if out.value is not None:
        run.add_learnings(out.value.learnings)
        yield PlanEvent(
            round=run.round, task=task.number, action=number, selection=out.value, step=step
        )


async def act(
    run: Run, task: TaskRun, number: int, selection: ActionSelection, out: Out[Prepared]
) -> AsyncIterator[Event]:
    """Stage 2: collect the business parameters with a minimal prompt; defaults in code."""
    tool = find_tool(run, selection.action)
    assert tool is not None  # plan() only accepts actions of the catalog
    schema = reconcile_schema(selection.parametersSchema, tool.Parameters)
    messages = parameters_prompt(
        action=selection.action,
        objective=selection.actionObjective,
        context=selection.parametersContext,
        schema=schema,
    )
    defaults = DefaultsContext(
        language=run.state.language,
        task_type=task.item.taskType,
        text=task_text(run, task, selection.actionObjective),
    )
    async for event in ask(
        run,
        messages,
        output=ActionParameters,
        kind="parameters",
        out=out,
        check=lambda answer: prepare_parameters(tool, answer.parameters, defaults),
        task=task.number,
        action=number,
    ):
        yield event
    if out.value is not None:
        yield ActEvent(
            round=run.round,
            task=task.number,
            action=number,
            method=selection.action,
            parameters=out.value.values,
            defaultsApplied=out.value.applied,
            dropped=out.value.dropped,
            documents=selection.requiredInputDocuments,
            connection=selection.requiredConnection,
        )


async def refine(
    run: Run, task: TaskRun, number: int, out: Out[RefinementDecision]
) -> AsyncIterator[Event]:
    """Decide from the latest observation whether to continue or stop."""
    latest = task.steps[-1]
    messages = build(
        "refine",
        objective=task.item.objective,
        criteria=task.criteria(),
        steps=task.steps_text(latest_observation=False),
        observation=render_observation(latest.observation),
    )
    async for event in ask(
        run,
        messages,
        output=RefinementDecision,
        kind="refine",
        out=out,
        task=task.number,
        action=number,
    ):
        yield event
