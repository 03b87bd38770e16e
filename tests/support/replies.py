"""Scripted model replies in the shapes the engine asks for (shared by engine and app tests)."""

from __future__ import annotations

from typing import Any


def taskplan(
    *objectives: str,
    task_type: str = "general",
    criteria: str = "It is done.",
    first: dict | None = None,
) -> dict:
    """A task plan; with `first`, the first task's first action comes with it (no Stage 1)."""
    tasks = [
        {"objective": o, "successCriteria": [criteria], "taskType": task_type} for o in objectives
    ]
    return {"overview": "plan", "tasks": tasks, "firstAction": first}


def select(action: str = "web.search", **extra: Any) -> dict:
    reply: dict[str, Any] = {
        "action": action,
        "actionObjective": f"Run {action}",
        "learnings": [],
        "requiredInputDocuments": [],
        "requiredConnection": None,
        "parametersContext": "PowerOn is a chat product.",
        "parametersSchema": {
            "fields": [{"name": "query", "type": "string", "required": True, "description": "q"}]
        },
    }
    reply.update(extra)
    return reply


def params(**values: Any) -> dict:
    return {"schema": "parameters_v1", "parameters": values}


def stop(criteria_met: bool = True, reason: str = "Done.") -> dict:
    return {"decision": "stop", "reason": reason, "criteriaMet": criteria_met}


def cont(reason: str = "More is needed.", next: dict | None = None) -> dict:
    """Continue; with `next`, the next action comes with the decision (no Stage 1 call)."""
    return {"decision": "continue", "reason": reason, "next": next}


def review(status: str = "success", improvements: list[str] | None = None) -> dict:
    return {"status": status, "reason": f"review {status}", "improvements": improvements or []}


def extract_step(document_ref: str) -> list[dict]:
    """The Stage 1 reply for one document.extract over `document_ref`: its schema asks for
    nothing, so there is no Stage 2 call (and no aiPrompt: the tool asks the model nothing)."""
    return [
        select(
            "document.extract",
            requiredInputDocuments=[document_ref],
            parametersSchema={"fields": []},
        )
    ]
