"""Actionplan mode (legacy): a task's whole action list is planned upfront, then executed."""

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
from workflows.engine.loop.core import Out, Rejected, RoundContext, TaskState
from workflows.engine.loop.defaults import DefaultsContext
from workflows.engine.model.calls import ask, rejected_proposal, with_cause
from workflows.engine.prompting.catalog import planned_search, task_catalog
from workflows.engine.prompting.narrowed import actionplan_output
from workflows.engine.prompting.prompts import plan_format
from workflows.engine.prompting.ranking import SEARCH_ACTION, CatalogView
from workflows.engine.prompting.selection import selection_messages, task_tools
from workflows.engine.records.events import ActEvent, ActionPlanEvent, Event, PlanEvent
from workflows.engine.records.parts import PlannedStep
from workflows.engine.records.protocols import describe_error
from workflows.engine.records.schemas import ActionPlan, ActionSelection, Observation, PlannedAction
from workflows.engine.records.wording import explain_error

Planned = list[tuple[PlannedAction, Prepared]]


async def run_task(ctx: RoundContext, task: TaskState) -> AsyncIterator[Event]:
    """Plan every action of the task with its parameters (or take the plan the task plan
    carried, when it passes the same checks), show the plan, then run it."""
    planned: Out[Planned] = Out()
    proposed, task.planned = task.planned, None
    if proposed is not None:
        try:
            planned.value = checked_plan(ctx, task, task_catalog(ctx, task), proposed)
        except Rejected as error:
            what = "The action plan proposed with the task plan"
            yield rejected_proposal(ctx, task.number, error, what, "The actions are planned again.")
    if planned.value is None:
        async for event in plan_actions(ctx, task, planned):
            yield event
    if planned.value is None:
        step, opened = ctx.begin_step(task, 1)
        yield opened
        reason = with_cause(
            "The model gave no valid action plan after one corrective retry", planned.error
        )
        observation = failed_observation(ctx, step, reason)
        async for event in record_step(ctx, step, None, observation, status="failed"):
            yield event
        yield ctx.end_step(step, reason=reason)
        task.stop_code, task.stop_reason = "step_failed", reason
        yield ctx.status("step_failed", reason, task=task.number, action=step.action)
        return
    yield ActionPlanEvent(
        round=ctx.round,
        task=task.number,
        actions=[
            PlannedStep(action=a.action, objective=a.actionObjective) for a, _ in planned.value
        ],
    )
    for number, (action, prepared) in enumerate(planned.value, start=1):
        if stopped := ctx.budget_stop(task):
            yield stopped
            return
        step, opened = ctx.begin_step(task, number, method=action.action)
        yield opened
        selection = ActionSelection(
            action=action.action,
            actionObjective=action.actionObjective,
            requiredInputDocuments=action.requiredInputDocuments,
            requiredConnection=action.requiredConnection,
        )
        yield PlanEvent(**step.position(), selection=selection, step=number)
        yield ActEvent(
            **step.position(),
            method=action.action,
            parameters=prepared.values,
            defaultsApplied=prepared.applied,
            dropped=prepared.dropped,
            documents=action.requiredInputDocuments,
            connection=action.requiredConnection,
        )
        call = ActionCall(
            name=action.action,
            objective=action.actionObjective,
            references=action.requiredInputDocuments,
            connection=action.requiredConnection,
            prepared=prepared,
            label=action.resultLabel,
        )
        observed: Out[Observation] = Out()
        async for event in execute_action(ctx, step, call, observed):
            yield event
        yield ctx.end_step(step)
        if observed.value is None or not observed.value.success:
            task.stop_code = "step_failed"
            ended = {"rejected": "was rejected by the user", "stopped": "was not approved in time"}
            task.stop_reason = (
                f"Action {step.action} ({action.action}) {ended.get(step.status, 'failed')}; "
                "the plan stops here."
            )
            yield ctx.status("step_failed", task.stop_reason, task=task.number, action=step.action)
            return
    if stopped := ctx.budget_stop(task):  # spent by the last action: no review call
        yield stopped
        return
    task.stop_code, task.stop_reason = "plan_complete", "Every planned action ran."
    yield ctx.status("plan_complete", task.stop_reason, task=task.number)


async def plan_actions(
    ctx: RoundContext, task: TaskState, out: Out[Planned]
) -> AsyncIterator[Event]:
    """Ask for the action list; every action and its parameters are checked before any runs."""
    limit = ctx.state.max_steps
    view = task_catalog(ctx, task)
    messages = selection_messages(
        ctx,
        task,
        "actionplan",
        tools=view.shown,  # a hidden tool of the task is still allowed
        max_steps=limit,
        plan_format=plan_format(round=ctx.round, task=task.number, first_action=task.actions + 1),
    )
    output = actionplan_output(  # a cut catalog leaves the names free
        tuple(tool.name for tool in task_tools(ctx, task)) if not view.hidden else (),
        tuple(c.label for c in ctx.state.connections),
        limit,
    )
    first = task.actions + 1
    now = f"At most {limit} actions: round {ctx.round}, task {task.number}, numbered from {first}."
    async for event in ask(
        ctx,
        messages,
        output=output,
        kind="actionplan",
        out=out,
        check=lambda plan: checked_plan(ctx, task, view, plan),
        task=task.number,
        now=now,
    ):
        yield event


def checked_plan(
    ctx: RoundContext, task: TaskState, view: CatalogView, plan: ActionPlan
) -> Planned:
    """The plan with each action's parameters prepared, or Rejected saying what breaks a rule
    (too many actions, an action not allowed for the task, invalid parameters)."""
    names = {tool.name for tool in task_tools(ctx, task)}
    limit = ctx.state.max_steps
    if len(plan.actions) > limit:
        raise Rejected(f"the plan has {len(plan.actions)} actions; at most {limit} are allowed")
    checked: Planned = []
    for index, action in enumerate(plan.actions, start=1):
        tool = find_tool(ctx, action.action)
        if action.action == SEARCH_ACTION and view.hidden:
            raise planned_search(view, action.actionObjective)
        if action.action not in names or tool is None:
            raise Rejected(
                f"action {index}: {action.action!r} is not allowed for this task; choose one "
                "of: " + ", ".join(sorted(names))
            )
        defaults = DefaultsContext(
            language=ctx.state.language,
            task_type=task.item.taskType,
            text=task_text(ctx, task, action.actionObjective),
        )
        try:
            prepared = prepare_parameters(tool, action.parameters, defaults)
        except ValueError as error:
            where = f"action {index} ({action.action})"
            raise Rejected(
                f"{where}: {describe_error(error)}",
                kind="validation",
                told=f"{where}: {explain_error(error, parameters=True)}",
            ) from error
        checked.append((action, prepared))
    return checked
