"""Actionplan mode (legacy): a task's whole action list is planned upfront, then executed."""

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
from .contracts import Message
from .core import Out, Rejected, Run, TaskRun, ask
from .defaults import DefaultsContext
from .events import ActEvent, Event, PlanEvent, Position
from .guards import allowed_tools
from .prompts import (
    build,
    fit_history,
    render_catalog,
    render_connections,
    render_documents,
    render_list,
)
from .schemas import ActionPlan, ActionSelection, Observation, PlannedAction

Planned = list[tuple[PlannedAction, Prepared]]


async def run_task(run: Run, task: TaskRun) -> AsyncIterator[Event]:
    """Plan every action of the task with its parameters, then run them in order."""
    planned: Out[Planned] = Out()
    async for event in plan_actions(run, task, planned):
        yield event
    if planned.value is None:
        number = task.next_action()
        reason = "No valid action plan after one corrective retry."
        observation = failed_observation(run, task, number, reason)
        async for event in record_step(run, task, number, None, observation, status="failed"):
            yield event
        task.stop_code, task.stop_reason = "step_failed", reason
        yield run.status("step_failed", reason, task=task.number, action=number)
        return
    for step, (action, prepared) in enumerate(planned.value, start=1):
        if exhausted := run.budget.exhausted():
            task.stop_code, task.stop_reason = exhausted
            yield run.status(*exhausted, task=task.number)
            return
        number = task.next_action()
        where = Position(round=run.round, task=task.number, action=number)
        selection = ActionSelection(
            action=action.action,
            actionObjective=action.actionObjective,
            requiredInputDocuments=action.requiredInputDocuments,
            requiredConnection=action.requiredConnection,
        )
        yield PlanEvent(**where, selection=selection, step=step)
        yield ActEvent(
            **where,
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
        async for event in execute_action(run, task, number, call, observed):
            yield event
        if observed.value is None or not observed.value.success:
            task.stop_code = "step_failed"
            task.stop_reason = f"Action {number} ({action.action}) failed; the plan stops here."
            yield run.status("step_failed", task.stop_reason, task=task.number, action=number)
            return
    task.stop_code, task.stop_reason = "plan_complete", "Every planned action ran."
    yield run.status("plan_complete", task.stop_reason, task=task.number)


async def plan_actions(run: Run, task: TaskRun, out: Out[Planned]) -> AsyncIterator[Event]:
    """Ask for the action list; every action and its parameters are checked before any runs."""
    tools = allowed_tools(run.state.policy, task.item.taskType, run.tools.tools())
    names = {tool.name for tool in tools}
    limit = run.state.max_steps

    def check(plan: ActionPlan) -> Planned:
        if len(plan.actions) > limit:
            raise Rejected(f"the plan has {len(plan.actions)} actions; at most {limit} are allowed")
        checked: Planned = []
        for index, action in enumerate(plan.actions, start=1):
            tool = find_tool(run, action.action)
            if action.action not in names or tool is None:
                raise Rejected(
                    f"action {index}: {action.action!r} is not allowed for this task; choose one "
                    "of: " + ", ".join(sorted(names))
                )
            defaults = DefaultsContext(
                language=run.state.language,
                task_type=task.item.taskType,
                text=task_text(run, task, action.actionObjective),
            )
            try:
                prepared = prepare_parameters(tool, action.parameters, defaults)
            except ValueError as error:
                raise Rejected(
                    f"action {index} ({action.action}): {error}", kind="validation"
                ) from error
            checked.append((action, prepared))
        return checked

    def with_history(history: str) -> list[Message]:
        return build(
            "actionplan",
            max_steps=limit,
            round=run.round,
            task=task.number,
            first_action=task.actions + 1,
            prompt=run.state.prompt,
            objective=task.item.objective,
            criteria=task.criteria(),
            catalog=render_catalog(tools),
            documents=render_documents(run.store.index()),
            connections=render_connections(run.state.connections),
            learnings=render_list(run.learnings),
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
        run, messages, output=ActionPlan, kind="actionplan", out=out, check=check, task=task.number
    ):
        yield event
