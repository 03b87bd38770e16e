"""React mode: per task, select → set parameters → act → observe → refine, until a stop."""

from __future__ import annotations

from collections.abc import AsyncIterator

from workflows.engine.loop.actions import (
    ActionCall,
    Prepared,
    execute_action,
    failed_observation,
    find_tool,
    prepare_parameters,
    record_step,
    task_text,
)
from workflows.engine.loop.answer import answer_key
from workflows.engine.loop.core import Out, Rejected, RoundContext, Step, TaskState
from workflows.engine.loop.defaults import DefaultsContext, apply_defaults
from workflows.engine.loop.titles import unwritten_titles
from workflows.engine.model.calls import ask, rejected_proposal, with_cause
from workflows.engine.prompting.catalog import catalog_check, select, task_catalog
from workflows.engine.prompting.narrowed import parameters_output
from workflows.engine.prompting.prompts import (
    parameters_prompt,
    reconcile_schema,
    render_observation,
)
from workflows.engine.prompting.ranking import SEARCH_ACTION
from workflows.engine.prompting.selection import (
    answer_rule,
    answers_with_refine,
    refinement_output_for,
    selection_messages,
    unavailable_actions,
    unavailable_step,
)
from workflows.engine.records.events import (
    ActEvent,
    AskEvent,
    ErrorEvent,
    Event,
    PlanEvent,
    RefineEvent,
)
from workflows.engine.records.protocols import Tool
from workflows.engine.records.schemas import (
    ActionSelection,
    Observation,
    ParametersSchema,
    RefinementDecision,
)
from workflows.engine.records.wording import explain_error


async def run_task(ctx: RoundContext, task: TaskState) -> AsyncIterator[Event]:
    """The loop: one action per step until refine stops it, or a limit does."""
    limit, steps = ctx.state.max_steps, 0
    while True:
        if stopped := ctx.budget_stop(task):
            yield stopped
            return
        if steps >= limit:
            more = Out[int]()
            reached = counted(limit, "step")
            question = f"Task {task.number} reached {reached}. Continue for more steps?"
            limit_reason = f"The maximum of {reached} was reached."
            async for event in ask_to_continue(ctx, task, steps, question, limit_reason, more):
                yield event
            if not more.value:
                return
            limit += more.value
        steps += 1
        proposed = task.proposed.action if task.proposed else ""
        step, opened = ctx.begin_step(task, steps, method=proposed)
        yield opened
        stop = Out[bool]()
        async for event in iterate(ctx, step, stop):
            yield event
        if stop.value:
            return


def counted(number: int, noun: str) -> str:
    """'1 step', '3 steps'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


async def ask_to_continue(
    ctx: RoundContext,
    task: TaskState,
    steps: int,
    question: str,
    limit_reason: str,
    out: Out[int],
) -> AsyncIterator[Event]:
    """At the step limit, ask the user for more steps; the partial work stays either way."""
    yield AskEvent(round=ctx.round, task=task.number, question=question, stepsDone=steps)
    answer = ctx.controls.ask_continue(
        task=task.number, steps_done=steps, timeout=ctx.budget.remaining_seconds()
    )
    granted = await ctx.wait_for_user(answer)
    out.value = max(0, granted or 0)
    yield AskEvent(
        round=ctx.round,
        task=task.number,
        question=question,
        stepsDone=steps,
        status="cancelled" if granted is None else "answered",
        granted=out.value,
    )
    if out.value:
        more = counted(out.value, "more step")
        yield ctx.status("info", f"Continuing for {more}.", task=task.number)
        return
    unanswered = " The question was not answered in time." if granted is None else ""
    task.stop_code, task.stop_reason = "max_steps", limit_reason + unanswered
    yield ctx.status(task.stop_code, task.stop_reason, task=task.number)


async def iterate(ctx: RoundContext, step: Step, stop: Out[bool]) -> AsyncIterator[Event]:
    """One step: select, set parameters, act and observe, refine; then close the step."""
    task = step.task
    selection: Out[ActionSelection] = Out()
    async for event in plan(ctx, step, selection):
        yield event
    prepared: Out[Prepared] = Out()
    if selection.value is not None:
        missing = unavailable_actions(ctx, task.item.taskType).get(selection.value.action)
        if missing is not None:  # said in the step and the answer; the next step chooses again
            async for event in unavailable_step(ctx, step, selection.value.action, missing):
                yield event
            return
        async for event in act(ctx, step, selection.value, prepared):
            yield event
    if selection.value is None or prepared.value is None:
        stage = "action selection" if selection.value is None else "parameters"
        cause = selection.error if selection.value is None else prepared.error
        reason = with_cause(
            f"Step {step.number} failed: the model gave no valid {stage} after one corrective "
            "retry",
            cause,
        )
        name = selection.value.action if selection.value else ""
        observation = failed_observation(ctx, step, reason)
        async for event in record_step(ctx, step, None, observation, status="failed", name=name):
            yield event
        yield ctx.end_step(step, reason=reason)
        task.stop_code, task.stop_reason = "step_failed", reason
        yield ctx.status("step_failed", reason, task=task.number, action=step.action)
        stop.value = True
        return

    call = ActionCall(
        name=selection.value.action,
        objective=selection.value.actionObjective,
        references=selection.value.requiredInputDocuments,
        connection=selection.value.requiredConnection,
        prepared=prepared.value,
        learnings=selection.value.learnings,
    )
    async for event in execute_action(ctx, step, call, Out[Observation]()):
        yield event
    if stopped := ctx.budget_stop(task, action=step.action):  # spent by the action or its wait
        yield ctx.end_step(step)
        yield stopped
        stop.value = True
        return

    decision: Out[RefinementDecision] = Out()
    async for event in refine(ctx, step, decision):
        yield event
    verdict = decision.value or RefinementDecision(
        decision="stop",
        reason=with_cause(
            "No valid refinement decision after one corrective retry", decision.error
        ),
    )
    if verdict.decision == "continue" and verdict.criteriaMet:
        # The model judged the criteria met and still asked for more: a small model does
        # this step after step until the limit. Its own judgement stops the task; the steps
        # then decide whether it succeeded, as for any stop.
        verdict = verdict.model_copy(update={"decision": "stop", "next": None})
        yield ctx.status(
            "info",
            "Refine judged the success criteria met but asked to continue; the task stops "
            "here, and its steps decide whether it succeeded.",
            task=task.number,
            action=step.action,
        )
    unwritten = await unwritten_titles(ctx) if task is ctx.tasks[-1] else []
    task.left = ""
    if verdict.decision == "stop" and verdict.criteriaMet and unwritten:
        # The judgement, checked: the document the request asks for does not exist yet.
        said = f"the request asks for a document titled “{unwritten[0]}” and none exists yet"
        ctx.add_learnings([f"Still to do: {said}."])
        task.left = said
        verdict = verdict.model_copy(
            update={"decision": "continue", "criteriaMet": False, "next": None}
        )
        yield ctx.status(
            "info",
            f"Refine judged the criteria met, but {said}; the task goes on.",
            task=task.number,
            action=step.action,
        )
    proposed = verdict.next if verdict.decision == "continue" else None
    yield RefineEvent(
        **step.position(),
        decision=verdict.decision,
        reason=verdict.reason,
        criteriaMet=verdict.criteriaMet,
        nextHint=f"{proposed.action}: {proposed.actionObjective}" if proposed else None,
    )
    yield ctx.end_step(step)
    # The agent's own judgement of whether work is left: a task the host then cuts short
    # (its step limit, a budget) is incomplete, whatever a review says.
    task.unfinished = (verdict.reason or "continue") if verdict.decision == "continue" else ""
    if verdict.decision == "stop":
        code = "criteria_met" if verdict.criteriaMet else "no_improvement"
        if decision.value is None:
            code = "step_failed"
        reason = verdict.reason
        if code == "criteria_met" and (unsupported := task.facts()):  # a claim, checked
            code, reason = "no_improvement", f"Refine judged the criteria met, but {unsupported}."
        if code == "criteria_met":  # the round's answer, when refine wrote it (still checked)
            task.answer = (getattr(verdict, "answer", None) or "").strip()
        task.stop_code, task.stop_reason = code, reason
        reason = reason or code.replace("_", " ")
        yield ctx.status(code, reason, task=task.number, action=step.action)
        stop.value = True
        return
    task.proposed = proposed


async def plan(ctx: RoundContext, step: Step, out: Out[ActionSelection]) -> AsyncIterator[Event]:
    """Stage 1: select one action and its references; no parameter values. The action the
    last refinement proposed is taken as it is, unless the user steered since."""
    task = step.task
    proposed, task.proposed = task.proposed, None
    notes = await ctx.controls.steering()
    if notes:
        ctx.add_learnings([f"User note: {note}" for note in notes])
        yield ctx.status(
            "info", "Steering note(s) received: " + " | ".join(notes), task=task.number
        )
        proposed = None  # the note may change the course: choose again with it
    if proposed is not None and proposed.action != SEARCH_ACTION:
        out.value = proposed
    else:  # refine may have proposed a catalog search: Stage 1 answers it, then chooses
        async for event in select(ctx, step, out, proposed_search=proposed):
            yield event
    if out.value is not None:
        ctx.add_learnings(out.value.learnings)
        step.method = out.value.action
        yield PlanEvent(**step.position(), selection=out.value, step=step.number)


async def act(
    ctx: RoundContext, step: Step, selection: ActionSelection, out: Out[Prepared]
) -> AsyncIterator[Event]:
    """Stage 2: collect the business parameters with a minimal prompt; defaults in code.
    When the schema asks for nothing, the defaults are taken without a model call."""
    tool = find_tool(ctx, selection.action)
    assert tool is not None  # plan() only accepts actions of the catalog
    defaults = DefaultsContext(
        language=ctx.state.language,
        task_type=step.task.item.taskType,
        text=task_text(ctx, step.task, selection.actionObjective),
    )
    schema = left_to_stage_two(
        reconcile_schema(selection.parametersSchema, tool.Parameters), tool, defaults
    )
    messages = parameters_prompt(
        action=selection.action,
        objective=selection.actionObjective,
        context=selection.parametersContext,
        schema=schema,
    )
    if not schema.fields:  # nothing for Stage 2 to set: the defaults, without a call
        try:
            out.value = prepare_parameters(tool, {}, defaults)
        except ValueError as error:
            yield ErrorEvent(
                **step.position(),
                kind="validation",
                message=explain_error(error, parameters=True)[:1_500],
            )
    else:
        async for event in ask(
            ctx,
            messages,
            output=parameters_output(tool.Parameters, tuple(f.name for f in schema.fields)),
            kind="parameters",
            out=out,
            check=lambda answer: prepare_parameters(tool, answer.parameters, defaults),
            task=step.task.number,
            action=step.action,
        ):
            yield event
    if out.value is not None:
        yield ActEvent(
            **step.position(),
            method=selection.action,
            parameters=out.value.values,
            defaultsApplied=out.value.applied,
            dropped=out.value.dropped,
            documents=selection.requiredInputDocuments,
            connection=selection.requiredConnection,
        )


def left_to_stage_two(
    schema: ParametersSchema, tool: Tool, defaults: DefaultsContext
) -> ParametersSchema:
    """The fields Stage 2 has to set: Stage 1's, without the optional ones the host's
    defaults fix from the task (its language, search depth, recency, format). When none is
    left, the action runs on its defaults without a Stage 2 call."""
    _, fixed = apply_defaults(tool.Parameters, {}, defaults)
    kept = [f for f in schema.fields if f.required or f.name not in fixed]
    return schema if len(kept) == len(schema.fields) else ParametersSchema(fields=kept)


async def refine(
    ctx: RoundContext, step: Step, out: Out[RefinementDecision]
) -> AsyncIterator[Event]:
    """Decide from the latest observation whether to stop, or which action comes next (one
    call: the next action is checked like Stage 1; when it breaks a rule, it is said so and
    the next step chooses again)."""
    task = step.task
    view = task_catalog(ctx, task)
    check_selection = catalog_check(ctx, task, view, searching=True)
    dropped: list[Rejected] = []

    def check(decision: RefinementDecision) -> RefinementDecision:
        if decision.decision == "stop" or decision.next is None:
            return decision.model_copy(update={"next": None})
        try:
            check_selection(decision.next)
        except Rejected as error:
            dropped.append(error)
            return decision.model_copy(update={"next": None})
        return decision

    messages = selection_messages(
        ctx,
        task,
        "refine",
        tools=view.shown,
        steps=task.steps_text(latest_observation=False),
        observation=render_observation(task.steps[-1].observation),
        answer=answer_rule(ctx, 'with "stop" and criteriaMet true')
        if answers_with_refine(ctx)
        else "",
    )
    async for event in ask(
        ctx,
        messages,
        output=refinement_output_for(ctx, task, actions=not view.hidden),
        kind="refine",
        out=out,
        check=check,
        task=task.number,
        action=step.action,
        key=answer_key(ctx) if answers_with_refine(ctx) else "",
    ):
        yield event
    if dropped and out.value is not None:
        error = dropped[-1]
        what = "The next action proposed with the refinement decision"
        then = "The next step chooses again."
        yield rejected_proposal(ctx, task.number, error, what, then, action=step.action)
