"""Storing events: each becomes a WorkflowEvent plus the rows it concerns.

Runs in a worker thread (database_sync_to_async), one short transaction per event. The
stored event is read back into its typed envelope inside the transaction, so an event that
does not fit the contract is never committed.
"""

from __future__ import annotations

from django.db import transaction

from workflows import services
from workflows.contract import Envelope, NoticeEvent, payload_of
from workflows.engine.events import BaseEvent, MessageEvent, UsageEvent
from workflows.models import ChatDocument, ChatMessage, WorkflowEvent


def record(workflow_id: int, event: BaseEvent, *, ordinal: int | None = None) -> Envelope | None:
    """Store one event and the rows it concerns; its envelope, ready to broadcast.

    With an `ordinal` (its place in its round), an event already stored is not stored again
    (None is returned): a resumed round replays its events without repeating them.
    """
    assert not isinstance(event, NoticeEvent), "notices are for one socket, never stored"
    tokens = None
    with transaction.atomic():
        if (
            ordinal is not None
            and WorkflowEvent.objects.filter(
                workflow_id=workflow_id, round=event.round, ordinal=ordinal
            ).exists()
        ):
            return None
        match event:
            case UsageEvent():
                tokens = (event.prompt_tokens, event.completion_tokens)
            case MessageEvent(messageId=None):
                message = message_store(workflow_id, event)
                event = event.model_copy(update={"messageId": message.pk})
        stored = services.event_append(
            workflow_id=workflow_id,
            type=event.type,
            payload=payload_of(event),
            tokens=tokens,
            round=event.round,
            task=event.task,
            action=event.action,
            ordinal=ordinal,
        )
        return Envelope.from_row(stored)


def message_store(workflow_id: int, event: MessageEvent) -> ChatMessage:
    """A complete message from the engine: an action's record or the final answer."""
    message = ChatMessage.objects.create(
        workflow_id=workflow_id,
        role=event.role,
        round=event.round,
        task=event.task,
        action=event.action,
        action_method=event.method,
        action_name=event.name,
        status=event.status,
        content=event.content,
        summary=event.summary,
        documents_label=event.documentsLabel,
        success=event.success,
        learnings=event.learnings,
    )
    if event.documentsLabel:
        ChatDocument.objects.filter(workflow_id=workflow_id, label=event.documentsLabel).update(
            message=message
        )
    return message
