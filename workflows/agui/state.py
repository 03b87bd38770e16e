"""The shared state an AG-UI front-end sees of a round (its `STATE_SNAPSHOT`, then each change
as a `STATE_DELTA`): the task checklist, each step's telemetry, the documents produced, what
the round has spent, its status and the question it waits on. Plain JSON, camelCase like the
rest of AG-UI; a change is an RFC 6902 JSON Patch made by comparing the state before and
after an event."""

from __future__ import annotations

import copy
from typing import Any

from workflows.engine.records.events import StepEvent, TaskEvent, UsageEvent
from workflows.engine.records.schemas import TaskItem

State = dict[str, Any]
"""Changed only by replacing parts (see `before_change`)."""


def initial_state(*, workflow: int, round: int, page: str) -> State:
    """The state of a round before any of its events."""
    return {
        "workflow": workflow,
        "round": round,
        "page": page,
        "status": "running",
        "reason": "",
        "tasks": [],
        "steps": [],
        "documents": [],
        "usage": {
            "promptTokens": 0,
            "completionTokens": 0,
            "cachedTokens": 0,
            "cost": None,
            "currency": "",
        },
        "question": None,
    }


def plan_tasks(state: State, tasks: list[TaskItem]) -> None:
    """The round's tasks, as its plan lists them, all pending."""
    state["tasks"] = [
        {
            "number": number,
            "objective": task.objective,
            "successCriteria": list(task.successCriteria),
            "status": "pending",
            "reason": "",
            "attempt": 1,
            "review": None,
        }
        for number, task in enumerate(tasks, start=1)
    ]


def task_entry(state: State, number: int) -> dict[str, Any] | None:
    """The checklist's entry of task `number` (None before the plan names it)."""
    tasks = state["tasks"]
    return tasks[number - 1] if 0 < number <= len(tasks) else None


def change_task(state: State, number: int, **changes: Any) -> None:
    """Change task `number`'s entry (a new one when the plan did not list it)."""
    entry = task_entry(state, number)
    if entry is None:
        state["tasks"].append({"number": number, "review": None, **changes})
    else:
        state["tasks"][number - 1] = {**entry, **changes}


def update_task(state: State, event: TaskEvent) -> None:
    """A task changed status."""
    entry = task_entry(state, event.task) or {}
    change_task(
        state, event.task,
        objective=event.objective or entry.get("objective", ""),
        successCriteria=list(event.successCriteria or entry.get("successCriteria", [])),
        status=event.status, reason=event.reason, attempt=event.attempt,
    )  # fmt: skip


def update_step(state: State, event: StepEvent) -> None:
    """A step opened (a new entry) or closed (its telemetry)."""
    entry = {
        "task": event.task,
        "step": event.step,
        "action": event.action,
        "method": event.method,
        "status": event.status,
        "reason": event.reason,
        "durationMs": event.durationMs,
        "tokens": event.tokens,
        "cachedTokens": event.cachedTokens,
        "cost": event.cost.model_dump(mode="json") if event.cost else None,
        "model": event.model,
    }
    for index, known in enumerate(state["steps"]):
        if (known["task"], known["action"]) == (event.task, event.action):
            state["steps"][index] = entry
            return
    state["steps"].append(entry)


def add_usage(state: State, event: UsageEvent) -> None:
    """What one model call spent, added to the round's."""
    usage = dict(state["usage"])
    usage["promptTokens"] += event.promptTokens
    usage["completionTokens"] += event.completionTokens
    usage["cachedTokens"] += event.cachedTokens
    if event.cost is not None and usage["currency"] in ("", event.cost.currency):
        usage["cost"] = round((usage["cost"] or 0.0) + event.cost.total, 9)
        usage["currency"] = event.cost.currency
    state["usage"] = usage


def before_change(state: State) -> State:
    """What `diff` compares a changed state with: each part's container copied, not its
    items (every change replaces the item it changes, never edits one in place)."""
    return {key: copy.copy(value) for key, value in state.items()}


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """A JSON Patch that turns `before` into `after`: objects key by key, a list that only
    grew item by item and by appending, anything else replaced whole."""
    if before is after or before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        ops: list[dict[str, Any]] = []
        for key in before.keys() - after.keys():
            ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in after.items():
            where = f"{path}/{_escape(key)}"
            if key not in before:
                ops.append({"op": "add", "path": where, "value": value})
            else:
                ops += diff(before[key], value, where)
        return ops
    if isinstance(before, list) and isinstance(after, list) and len(after) >= len(before):
        ops = []
        for index, value in enumerate(after):
            if index < len(before):
                ops += diff(before[index], value, f"{path}/{index}")
            else:
                ops.append({"op": "add", "path": f"{path}/-", "value": value})
        return ops
    return [{"op": "replace", "path": path, "value": after}]
