"""Storing engine events: each becomes a WorkflowEvent plus the rows it concerns.

Runs in a worker thread (database_sync_to_async), one short transaction per event.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

from . import live, services
from .models import ChatDocument, ChatMessage, ChatWorkflow, WorkflowEvent

ROUTING_FIELDS = ("type", "round", "task", "action")


def record(workflow_id: int, event: dict[str, Any]) -> dict[str, Any]:
    """Store one event and apply it; return its public JSON, ready to broadcast."""
    payload = {k: v for k, v in event.items() if k not in ROUTING_FIELDS}
    position = {name: int(event.get(name) or 0) for name in ("round", "task", "action")}
    with transaction.atomic():
        stored = services.event_append(
            workflow_id=workflow_id, type=event["type"], payload=payload, **position
        )
        apply(stored)
    return live.event_as_json(stored)


def apply(event: WorkflowEvent) -> None:
    """Update what the event concerns: counters, messages, token totals."""
    workflow = ChatWorkflow.objects.filter(pk=event.workflow_id)
    if event.task:
        workflow.update(current_task=event.task, current_action=event.action)
    payload = event.payload
    match event.type:
        case "usage":
            workflow.update(
                prompt_tokens=F("prompt_tokens") + int(payload.get("prompt_tokens") or 0),
                completion_tokens=F("completion_tokens")
                + int(payload.get("completion_tokens") or 0),
            )
            totals = workflow.values_list("prompt_tokens", "completion_tokens").get()
            remember(event, workflowTokens=sum(totals))
        case "message" if "messageId" not in payload:  # the user's is stored when sent
            message_store(event)


def remember(event: WorkflowEvent, **extra: Any) -> None:
    """Add what the host learned while applying the event to its stored payload."""
    event.payload = {**event.payload, **extra}
    event.save(update_fields=["payload"])


def message_store(event: WorkflowEvent) -> ChatMessage:
    """A complete message from the engine: an action's record or the final answer."""
    payload = event.payload
    label = payload.get("documentsLabel") or ""
    message = ChatMessage.objects.create(
        workflow_id=event.workflow_id,
        role=payload.get("role", ChatMessage.Role.ASSISTANT),
        round=event.round,
        task=event.task,
        action=event.action,
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
        ChatDocument.objects.filter(workflow_id=event.workflow_id, label=label).update(
            message=message
        )
    remember(event, messageId=message.pk)
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
    with transaction.atomic():
        services.workflow_settle(workflow_id=workflow_id, status=status, reason=reason)
        stored = services.event_append(
            workflow_id=workflow_id,
            type="status",
            payload={"status": status, "reason": reason, "final": True},
            round=ChatWorkflow.objects.values_list("current_round", flat=True).get(pk=workflow_id),
        )
    return live.event_as_json(stored)
