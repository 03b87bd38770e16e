"""Per-user rates over the last hour, counted from the rows they leave behind (uploaded
documents, user messages), so every process of a scaled-out site sees the same counts; a
workflow's deletion leaves marks of its recent ones (`RateMark`), so deleting does not reset
the limits."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .models import ChatDocument, ChatMessage, ChatWorkflow, RateMark

if TYPE_CHECKING:
    from django.contrib.auth.models import User

WINDOW = timedelta(hours=1)


class Refusal(str):
    """Why a limit refuses, and in how many seconds it would not (None: waiting does not
    help, as for more files at once than the limit)."""

    retry_after: int | None

    def __new__(cls, text: str, retry_after: int | None) -> Refusal:
        refusal = super().__new__(cls, text)
        refusal.retry_after = retry_after
        return refusal


COMMAND_WINDOW = timedelta(minutes=1)


class Limited(Exception):
    """A per-user limit refuses; `refusal` says why, `retry_after` in how many seconds."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal
        self.retry_after = refusal.retry_after or 60


def take_command(owner_id: int, limit: int) -> None:
    """Count one command of the owner that stores or sends an event (feedback, a steering
    note, a rename, an answer) against `limit` a minute (0: no limit), under their lock, in
    the caller's transaction or one of its own; raises Limited when the minute is full."""
    if not limit:
        return
    with transaction.atomic():
        hold(get_user_model()(pk=owner_id))
        now = timezone.now()
        marks = RateMark.objects.filter(owner_id=owner_id, kind=RateMark.Kind.COMMAND)
        marks.filter(created__lt=now - COMMAND_WINDOW).delete()
        times = sorted(marks.values_list("created", flat=True))
        if len(times) >= limit:
            oldest = times[len(times) - limit]
            seconds = max(1, math.ceil((oldest + COMMAND_WINDOW - now).total_seconds()))
            raise Limited(
                Refusal(
                    f"Too many changes at once: at most {limit} a minute (feedback, steering "
                    f"notes, renames, answers). Try again in {seconds} "
                    f"second{'s' if seconds != 1 else ''}.",
                    seconds,
                )
            )
        RateMark.objects.create(owner_id=owner_id, kind=RateMark.Kind.COMMAND, created=now)


def hold(user: User) -> None:
    """Take the user's lock until the current transaction ends: what counts their rows and
    what inserts them, in another process or thread, waits for it, so parallel requests
    cannot all count the same hour. A row lock on PostgreSQL; on SQLite the transaction
    (begun IMMEDIATE) already holds the one write lock."""
    assert transaction.get_connection().in_atomic_block, "hold() needs a transaction"
    users = get_user_model().objects.select_for_update().filter(pk=user.pk)
    list(users.values_list("pk", flat=True))


def upload_refusal(*, user: User, adding: int, limit: int) -> Refusal | None:
    """Why `adding` more files may not be uploaded now (None: they may; `limit` 0: no
    limit)."""
    if not limit:
        return None
    recent = ChatDocument.objects.filter(
        workflow__owner=user,
        source=ChatDocument.Source.UPLOADED,
        created__gte=timezone.now() - WINDOW,
    ).exclude(message__reruns__isnull=False)  # a rerun's copies of earlier uploads are no upload
    wait = _wait(_times(recent, user, RateMark.Kind.UPLOAD), adding, limit)
    if wait is None:
        return None
    files = f"{limit} file{'s' if limit != 1 else ''}"
    return Refusal(f"Upload limit reached: at most {files} an hour. {wait}", wait.retry_after)


def round_refusal(*, user: User, limit: int) -> Refusal | None:
    """Why the user may not start another round now (None: they may; `limit` 0: no
    limit)."""
    if not limit:
        return None
    recent = ChatMessage.objects.filter(
        workflow__owner=user,
        role=ChatMessage.Role.USER,
        created__gte=timezone.now() - WINDOW,
    )
    wait = _wait(_times(recent, user, RateMark.Kind.ROUND), 1, limit)
    if wait is None:
        return None
    rounds = f"{limit} message{'s' if limit != 1 else ''}"
    text = f"Too many messages: at most {rounds} that start a round an hour. {wait}"
    return Refusal(text, wait.retry_after)


def _times(recent: QuerySet[Any], user: User, kind: str) -> list[datetime]:
    """When each counted row and each mark of a deleted workflow's of the last hour was
    made, oldest first."""
    since = timezone.now() - WINDOW
    marks = RateMark.objects.filter(owner=user, kind=kind, created__gte=since)
    times = [*recent.values_list("created", flat=True), *marks.values_list("created", flat=True)]
    return sorted(times)


def _wait(times: list[datetime], adding: int, limit: int) -> Refusal | None:
    """None when `adding` more fit in the window; else when enough of the recent ones
    will have left it."""
    over = len(times) + adding - limit
    if over <= 0:
        return None
    if adding > limit:
        return Refusal(f"Choose at most {limit} at once.", None)
    oldest = times[over - 1]
    seconds = max(1, math.ceil((oldest + WINDOW - timezone.now()).total_seconds()))
    minutes = max(1, math.ceil(seconds / 60))
    return Refusal(f"Try again in {minutes} minute{'s' if minutes != 1 else ''}.", seconds)


def mark_deleted(workflow: ChatWorkflow) -> None:
    """Before a workflow is deleted: mark its rounds and uploads of the last hour, which the
    limits go on counting; drop its owner's marks that no longer count."""
    since = timezone.now() - WINDOW
    owner = workflow.owner_id
    RateMark.objects.filter(owner_id=owner, created__lt=since).delete()
    rounds = workflow.messages.filter(role=ChatMessage.Role.USER, created__gte=since)
    uploads = workflow.documents.filter(
        source=ChatDocument.Source.UPLOADED, created__gte=since
    ).exclude(message__reruns__isnull=False)
    RateMark.objects.bulk_create(
        [
            *(RateMark(owner_id=owner, kind=RateMark.Kind.ROUND, created=at)
              for at in rounds.values_list("created", flat=True)),
            *(RateMark(owner_id=owner, kind=RateMark.Kind.UPLOAD, created=at)
              for at in uploads.values_list("created", flat=True)),
        ]
    )  # fmt: skip


def mark_discarded(upload: ChatDocument) -> None:
    """Before an upload not yet sent is taken back: mark it, if the limit still counts it."""
    if upload.created >= timezone.now() - WINDOW:
        RateMark.objects.create(
            owner_id=upload.workflow.owner_id, kind=RateMark.Kind.UPLOAD, created=upload.created
        )
