"""The API's answers, built from the rows the selectors return (the schemas are in
`schemas`)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from workflows import selectors
from workflows.events.contract import Envelope
from workflows.models import ChatDocument, ChatMessage, ChatWorkflow, WorkflowEvent
from workflows.services import PENDING_UPLOAD_LABEL

QUESTION_EVENTS = {"extend": "ask", "approve": "approval"}


def workflow_out(workflow: ChatWorkflow) -> dict[str, Any]:
    return {
        "id": workflow.pk,
        "title": str(workflow),
        "mode": workflow.mode,
        "status": workflow.status,
        "statusReason": workflow.status_reason,
        "maxSteps": workflow.max_steps,
        "currentRound": workflow.current_round,
        "lastSeq": workflow.last_seq,
        "tokens": {"prompt": workflow.prompt_tokens, "completion": workflow.completion_tokens},
        "created": workflow.created,
        "updated": workflow.updated,
        "page": workflow.get_absolute_url(),
    }


def document_out(document: ChatDocument) -> dict[str, Any]:
    return {
        "id": document.pk,
        "name": document.name,
        "mime": document.mime_type,
        "size": document.size,
        "sha256": document.sha256,
        "label": document.label,
        "round": document.round,
        "source": document.source,
        "sourceUrl": document.source_url,
        "pending": document.label == PENDING_UPLOAD_LABEL,
        "created": document.created,
        "content": reverse(
            "api-1:document_content",
            kwargs={"workflow_id": document.workflow_id, "document_id": document.pk},
        ),
    }


def message_out(message: ChatMessage) -> dict[str, Any]:
    return {
        "id": message.pk,
        "role": message.role,
        "round": message.round,
        "task": message.task,
        "action": message.action,
        "method": message.action_full_name,
        "status": message.status,
        "content": message.content,
        "summary": message.summary,
        "success": message.success,
        "feedback": message.feedback,
        "reruns": message.reruns,
        "documents": [document.pk for document in message.documents.all()],
        "created": message.created,
    }


def event_out(row: WorkflowEvent) -> dict[str, Any]:
    """A stored event as the live socket's JSON sends it."""
    return Envelope.from_row(row).as_json()


def run_out(workflow: ChatWorkflow) -> dict[str, Any]:
    """The run's state as a program reads it: the stored status, made `waiting` with its
    question while a step-limit question or an approval waits (as the sidebar says)."""
    status: str = workflow.status
    question = None
    if status == ChatWorkflow.Status.RUNNING:
        for kind, event_type in QUESTION_EVENTS.items():
            if selectors.open_question(workflow_id=workflow.pk, kind=kind) is None:
                continue
            asking = (
                workflow.events.filter(round=workflow.current_round, type=event_type)
                .order_by("-seq")
                .first()
            )
            if asking is not None:
                status, question = "waiting", {"kind": kind, "event": event_out(asking)}
                break
    ahead = None
    if status == ChatWorkflow.Status.QUEUED:
        ahead = selectors.runs_waiting(before_workflow=workflow.pk)
    return {
        "workflow": workflow.pk,
        "status": status,
        "round": workflow.current_round,
        "reason": workflow.status_reason,
        "ahead": ahead,
        "question": question,
        "lastSeq": workflow.last_seq,
    }
