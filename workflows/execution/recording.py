"""Storing engine events: each becomes a WorkflowEvent plus the rows it concerns.

Runs in a worker thread (database_sync_to_async), one short transaction per event.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from . import live, services
from .models import ChatDocument, ChatMessage, ChatWorkflow

ROUTING_FIELDS = ("type", "round", "task", "action")


def record(workflow_id: int, event: dict[str, Any]) -> dict[str, Any]:
    """Store one event and the rows it concerns; return its public JSON, ready to broadcast."""
    payload = {k: v for k, v in event.items() if k not in ROUTING_FIELDS}
    position = {name: int(event.get(name) or 0) for name in ("round", "task", "action")}
    tokens = None
    with transaction.atomic():
        match event["type"]:
            case "usage":
                tokens = (
                    int(payload.get("prompt_tokens") or 0),
                    int(payload.get("completion_tokens") or 0),
                )
            case "message" if "messageId" not in payload:  # the user's is stored when sent
                message = message_store(workflow_id, payload, **position)
                payload = {**payload, "messageId": message.pk}
        stored = services.event_append(
            workflow_id=workflow_id, type=event["type"], payload=payload, tokens=tokens, **position
        )
    return live.event_as_json(stored)


def message_store(
    workflow_id: int, payload: dict[str, Any], *, round: int, task: int, action: int
) -> ChatMessage:
    """A complete message from the engine: an action's record or the final answer."""
    label = payload.get("documentsLabel") or ""
    message = ChatMessage.objects.create(
        workflow_id=workflow_id,
        role=payload.get("role", ChatMessage.Role.ASSISTANT),
        round=round,
        task=task,
        action=action,
        action_method=payload.get("method") or "",
        action_name=payload.get("name") or "",
        status=payload.get("status") or "",
        content=payload.get("content") or "",
        summary=payload.get("summary") or "",
        documents_label=label,
        success=payload.get("success"),
        learnings=payload.get("learnings") or [],
    )
    if label:
        ChatDocument.objects.filter(workflow_id=workflow_id, label=label).update(message=message)
    return message


def settle(workflow_id: int, status: str, reason: str) -> dict[str, Any]:
    """Record the final status of a run as the workflow's state and as an event.

    A stop without a reason was asked for by the user when the workflow says "stopping";
    otherwise the server stopped under it.
    """
    if status == ChatWorkflow.Status.STOPPED and not reason:
        asked = ChatWorkflow.objects.filter(
            pk=workflow_id, status=ChatWorkflow.Status.STOPPING
        ).exists()
        reason = "Stopped by the user." if asked else "Interrupted: the server stopped."
    stored = services.workflow_settle(workflow_id=workflow_id, status=status, reason=reason)
    return live.event_as_json(stored)
