"""Writes: small keyword-only functions, one per change, named <entity>_<action>."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import get_valid_filename

from workflows.engine.records.events import MessageEvent
from workflows.events.contract import Envelope, FeedbackEvent, TitleEvent
from workflows.events.log import event_append

from . import media_types, rates
from .models import ChatDocument, ChatMessage, ChatWorkflow, Connection

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def workflow_create(
    *,
    owner: User,
    title: str = "",
    mode: str = ChatWorkflow.Mode.REACT,
    max_steps: int | None = None,
) -> ChatWorkflow:
    """Create an idle workflow for `owner`."""
    workflow = ChatWorkflow(owner=owner, title=title.strip()[:200], mode=mode)
    if max_steps is not None:
        workflow.max_steps = max_steps
    workflow.full_clean()
    workflow.save()
    return workflow


_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


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
    key: str | None = None,
) -> ChatDocument:
    """Store a file of a workflow under MEDIA_ROOT with its size and sha256."""
    name = safe_name(name)
    # Whoever gave the type (a browser, an MCP server): a valid one, or the name's.
    mime = media_types.clean(mime_type, name=name)
    document = ChatDocument(
        workflow=workflow,
        message=message,
        round=round,
        label=label,
        name=name[:255],
        mime_type=mime[:127],
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        source=source,
        source_url=source_url[:2000],
        key=key,
    )
    document.file.save(get_valid_filename(name), ContentFile(data), save=False)
    document.save()
    return document


def safe_name(name: str) -> str:
    """A file name as stored: its last path component only (it can never climb out of the
    workflow's folder), control characters as spaces (a line break breaks lists)."""
    name = _CONTROL.sub(" ", name)
    return PurePosixPath(name.replace("\\", "/")).name.strip() or "document"


def upload_name(name: str) -> str:
    """An uploaded file's name as the browser meant it: its double quotes are sent as %22
    (and line breaks as %0A, %0D: dropped)."""
    return name.replace("%22", '"').replace("%0A", "").replace("%0D", "")


def document_upload(
    *, workflow: ChatWorkflow, name: str, data: bytes, mime_type: str = ""
) -> ChatDocument:
    """Store a user's file for their next message (it joins the round that message opens)."""
    if mime_type == "application/octet-stream":  # browsers' "don't know": the name says more
        mime_type = ""
    return document_create(
        workflow=workflow,
        name=upload_name(name),
        data=data,
        label=PENDING_UPLOAD_LABEL,
        mime_type=mime_type,
        source=ChatDocument.Source.UPLOADED,
    )


def message_create(
    *, workflow: ChatWorkflow, role: str, content: str = "", **fields: Any
) -> ChatMessage:
    """Store a message of a workflow."""
    return ChatMessage.objects.create(workflow=workflow, role=role, content=content, **fields)


def connection_create(
    *, owner: User, label: str, kind: str, secret: str, url: str = ""
) -> Connection:
    """Store a user's credential under a label unique to them (with its server's URL for an
    MCP server of their own)."""
    connection = Connection(owner=owner, label=label, kind=kind, secret=secret, url=url)
    connection.full_clean()
    connection.save()
    return connection


def connection_update(*, connection: Connection, url: str, secret: str = "") -> Connection:
    """Change a connection's server URL, and its secret when a new one is given (an empty
    one keeps the stored secret)."""
    connection.url = url
    if secret:
        connection.secret = secret
    connection.full_clean()
    connection.save(update_fields=["url", "secret"])
    return connection


def message_feedback(*, message: ChatMessage, rating: int, comment: str = "") -> Envelope:
    """Record a user's thumbs up (1) or down (-1) on an answer, with its event: every open
    page of the workflow, and every later reload, shows the rating chosen. Counted against
    the owner's commands a minute (rates.Limited)."""
    with transaction.atomic():
        rates.take_command(message.workflow.owner_id, settings.POWERON_COMMANDS_PER_MINUTE)
        message.feedback = rating
        message.feedback_comment = comment.strip()
        message.save(update_fields=["feedback", "feedback_comment"])
        event = FeedbackEvent(
            round=message.round,
            messageId=message.pk,
            rating=rating,  # type: ignore[arg-type]  # the command checked it is 1 or -1
            comment=message.feedback_comment,
        )
        return event_append(workflow_id=message.workflow_id, event=event)


PENDING_UPLOAD_LABEL = "pending_upload"


def upload_label(round: int) -> str:
    """The label of the documents a user sent with the message that opened `round`."""
    return f"round{round}_upload"


class WorkflowBusy(Exception):
    """A run is already in progress for this workflow."""


class RoundRefused(WorkflowBusy):
    """The round cannot open as asked (say, it reruns a round that does not exist)."""


class UploadsRefused(RoundRefused):
    """A document sent with the message is not an upload waiting for it."""


class TooManyRuns(WorkflowBusy):
    """The user has as many runs going as one may have at once."""


class RateLimited(WorkflowBusy):
    """The user started as many rounds as one may in an hour; `retry_after` seconds."""

    def __init__(self, refusal: rates.Refusal) -> None:
        super().__init__(refusal)
        self.retry_after = refusal.retry_after or 60


def not_pending_uploads(workflow_id: int, document_ids: list[int]) -> list[int]:
    """The ids among `document_ids` that are not uploads of this workflow waiting for its
    next message (another workflow's, another user's, one sent already, none at all)."""
    waiting = set(
        ChatDocument.objects.filter(
            workflow_id=workflow_id,
            pk__in=document_ids,
            label=PENDING_UPLOAD_LABEL,
            source=ChatDocument.Source.UPLOADED,
        ).values_list("pk", flat=True)
    )
    return sorted(set(document_ids) - waiting)


def upload_discard(*, workflow: ChatWorkflow, document_id: int) -> bool:
    """Take back a file uploaded but not yet sent with a message (its file goes once this is
    committed); the hourly upload limit still counts it. False when it is no such upload."""
    with transaction.atomic():
        # Locked: a message sent meanwhile (which takes it into its round) waits, or wins.
        upload = (
            workflow.documents.select_for_update()
            .filter(pk=document_id, label=PENDING_UPLOAD_LABEL, source=ChatDocument.Source.UPLOADED)
            .first()
        )
        if upload is None:
            return False
        rates.mark_discarded(upload)
        upload.delete()
    return True


def upload_copy(upload: ChatDocument, *, message: ChatMessage) -> ChatDocument:
    """A copy of an earlier round's upload for the round `message` opens."""
    with upload.file.open("rb") as handle:
        data = handle.read()
    return document_create(
        workflow=message.workflow,
        name=upload.name,
        data=data,
        label=upload_label(message.round),
        round=message.round,
        mime_type=upload.mime_type,
        source=ChatDocument.Source.UPLOADED,
        message=message,
    )


def round_open(
    *,
    workflow_id: int,
    owner: User,
    text: str,
    document_ids: list[int],
    queued: bool = False,
    max_runs: int = 0,
    max_rounds_per_hour: int = 0,
    reruns: int | None = None,
) -> tuple[ChatWorkflow, ChatMessage, Envelope]:
    """Claim an idle workflow for a new round, store the user's message with its event, and
    attach its uploads. The message is on record before any run starts.

    `reruns` runs an earlier round again (its message edited, or as it was): the new round
    gets copies of that round's uploads and sees only the history before it; the earlier
    round stays in the workflow as it was.

    One run per workflow: the status update is a compare-and-set, so a second start loses.
    At most `max_runs` runs per user at once, and `max_rounds_per_hour` rounds started per
    user in the last hour (0: no limit).
    """
    with transaction.atomic():
        rates.hold(owner)  # a round opened in parallel counts, for every limit below
        if refusal := rates.round_refusal(user=owner, limit=max_rounds_per_hour):
            raise RateLimited(refusal)
        if busy := not_open(workflow_id, owner):  # before its uploads: a second click of
            raise WorkflowBusy(busy)  # Send says "running", not "attach the file again"
        if missing := not_pending_uploads(workflow_id, document_ids):
            raise UploadsRefused(
                f"Not an upload waiting for this workflow's next message: document "
                f"{', '.join(map(str, missing))}. Attach the file again."
            )
        going = ChatWorkflow.objects.filter(owner=owner, status__in=ChatWorkflow.ACTIVE_STATUSES)
        if max_runs and going.exclude(pk=workflow_id).count() >= max_runs:
            runs = f"{max_runs} run{'s' if max_runs != 1 else ''}"
            raise TooManyRuns(
                f"You already have {runs} going, the most allowed at once; wait for one to "
                "finish or stop one."
            )
        claimed = (
            ChatWorkflow.objects.filter(pk=workflow_id, owner=owner)
            .exclude(status__in=ChatWorkflow.ACTIVE_STATUSES)
            .update(
                status=ChatWorkflow.Status.QUEUED if queued else ChatWorkflow.Status.RUNNING,
                status_reason="",
                current_round=F("current_round") + 1,
                run_id=uuid.uuid4(),  # the round's durable run: never one of another round
                current_task=0,
                current_action=0,
                updated=timezone.now(),  # update() skips auto_now; the sidebar sorts by it
                # Alive from its opening: the watch of every process (`settle.cut_off_runs`)
                # leaves a round alone while it is handed to its run, before DBOS holds it.
                heartbeat=timezone.now(),
            )
        )
        if not claimed:
            raise WorkflowBusy(not_open(workflow_id, owner) or RUNNING)
        workflow = ChatWorkflow.objects.get(pk=workflow_id)
        source = None
        if reruns is not None:
            source = workflow.messages.filter(
                role=ChatMessage.Role.USER, round=reruns, round__lt=workflow.current_round
            ).first()
            if source is None:
                raise RoundRefused(f"Round {reruns} is not an earlier round of this workflow.")
        if not workflow.title:
            workflow.title = text.strip().splitlines()[0][:80]
            workflow.save(update_fields=["title"])
        message = ChatMessage.objects.create(
            workflow=workflow,
            role=ChatMessage.Role.USER,
            content=text,
            round=workflow.current_round,
            status="sent",
            reruns=reruns,
        )
        if source is not None:
            for upload in source.documents.filter(source=ChatDocument.Source.UPLOADED):
                upload_copy(upload, message=message)
        workflow.documents.filter(
            pk__in=document_ids, label=PENDING_UPLOAD_LABEL, source=ChatDocument.Source.UPLOADED
        ).update(
            label=upload_label(workflow.current_round),
            round=workflow.current_round,
            message=message,
        )
        event = MessageEvent(
            round=message.round,
            key=f"user-{message.pk}",
            role="user",
            content=text,
            messageId=message.pk,
            documents=[document.as_ref() for document in message.documents.order_by("id")],
            title=str(workflow),
            reruns=reruns,
            edited=source is not None and source.content != text,
        )
        stored = event_append(workflow_id=workflow.pk, event=event)
    return workflow, message, stored


TITLE_CHARS = ChatWorkflow._meta.get_field("title").max_length


def workflow_rename(*, workflow: ChatWorkflow, title: str) -> Envelope:
    """Give a workflow a new title (spaces collapsed), with its event for every open page and
    every later replay; ValueError says what is wrong."""
    title = " ".join(title.split())
    if not title:
        raise ValueError("A title cannot be empty.")
    if len(title) > TITLE_CHARS:  # type: ignore[operator]  # a CharField's, never None
        raise ValueError(f"A title has at most {TITLE_CHARS} characters.")
    with transaction.atomic():
        rates.take_command(workflow.owner_id, settings.POWERON_COMMANDS_PER_MINUTE)
        workflow.title = title
        workflow.save(update_fields=["title", "updated"])
        event = TitleEvent(round=0, title=title)
        return event_append(workflow_id=workflow.pk, event=event)


RUNNING = "This workflow is already running; stop it or wait for it."


def not_open(workflow_id: int, owner: User) -> str:
    """Why a round cannot open in the workflow now ("" when it can): deleted, stopping or
    running."""
    statuses = ChatWorkflow.objects.filter(pk=workflow_id, owner=owner).values_list(
        "status", flat=True
    )
    match statuses.first():
        case None:
            return "This workflow was deleted; start a new one."
        case ChatWorkflow.Status.STOPPING:
            return "The run is still stopping; send again in a moment (your text is kept)."
        case status if status in ChatWorkflow.ACTIVE_STATUSES:
            return RUNNING
    return ""


def workflow_delete(*, workflow: ChatWorkflow) -> None:
    """Delete a workflow with its messages, events and documents (their files go once the
    deletion is committed: `apps.delete_document_file`).

    Refused while a run is going: the run would write into a workflow that is gone.
    """
    with transaction.atomic():
        # Under the row's lock, so a round opened meanwhile is seen.
        status = (
            ChatWorkflow.objects.select_for_update()
            .filter(pk=workflow.pk)
            .values_list("status", flat=True)
            .first()
        )
        if status in ChatWorkflow.ACTIVE_STATUSES:
            raise WorkflowBusy("This workflow is running; stop it before deleting it.")
        rates.mark_deleted(workflow)  # the hourly limits still count its recent rounds
        workflow.delete()
