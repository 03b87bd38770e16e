"""Writes: small keyword-only functions, one per change, named <entity>_<action>."""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import PurePosixPath
from typing import Any

from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F
from django.utils.text import get_valid_filename

from .models import ChatDocument, ChatMessage, ChatWorkflow, Connection, WorkflowEvent


def workflow_create(
    *, owner, title: str = "", mode: str = ChatWorkflow.Mode.REACT, max_steps: int | None = None
) -> ChatWorkflow:
    """Create an idle workflow for `owner`."""
    workflow = ChatWorkflow(owner=owner, title=title.strip()[:200], mode=mode)
    if max_steps is not None:
        workflow.max_steps = max_steps
    workflow.full_clean()
    workflow.save()
    return workflow


def event_append(
    *,
    workflow_id: int,
    type: str,
    payload: dict[str, Any],
    round: int = 0,
    task: int = 0,
    action: int = 0,
) -> WorkflowEvent:
    """Store the next event of a workflow under the next seq (one short transaction)."""
    with transaction.atomic():
        # The row update serialises concurrent appends to one workflow on every backend.
        ChatWorkflow.objects.filter(pk=workflow_id).update(last_seq=F("last_seq") + 1)
        seq = ChatWorkflow.objects.values_list("last_seq", flat=True).get(pk=workflow_id)
        return WorkflowEvent.objects.create(
            workflow_id=workflow_id,
            seq=seq,
            type=type,
            round=round,
            task=task,
            action=action,
            payload=payload,
        )


def document_create(
    *,
    workflow: ChatWorkflow,
    name: str,
    data: bytes,
    label: str,
    round: int = 0,
    mime_type: str = "",
    source: str = ChatDocument.Source.PRODUCED,
    source_url: str = "",
    message: ChatMessage | None = None,
) -> ChatDocument:
    """Store a file of a workflow under MEDIA_ROOT with its size and sha256."""
    # Keep only the last path component: a name can never climb out of the workflow folder.
    safe_name = PurePosixPath(name.replace("\\", "/")).name.strip() or "document"
    mime = mime_type or mimetypes.guess_type(safe_name)[0] or "application/octet-stream"
    document = ChatDocument(
        workflow=workflow,
        message=message,
        round=round,
        label=label,
        name=safe_name[:255],
        mime_type=mime[:127],
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        source=source,
        source_url=source_url[:2000],
    )
    document.file.save(get_valid_filename(safe_name), ContentFile(data), save=False)
    document.save()
    return document


def message_create(*, workflow: ChatWorkflow, role: str, content: str = "", **fields: Any):
    """Store a message of a workflow."""
    return ChatMessage.objects.create(workflow=workflow, role=role, content=content, **fields)


def connection_create(*, owner, label: str, kind: str, secret: str) -> Connection:
    """Store a user's credential under a label unique to them."""
    connection = Connection(owner=owner, label=label, kind=kind, secret=secret)
    connection.full_clean()
    connection.save()
    return connection
