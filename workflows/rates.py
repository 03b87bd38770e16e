"""Per-user rates over the last hour, counted from the rows they leave behind (uploaded
documents, user messages), so every process of a scaled-out site sees the same counts."""

from __future__ import annotations

import math
from datetime import timedelta

from django.db.models import QuerySet
from django.utils import timezone

from .models import ChatDocument, ChatMessage

WINDOW = timedelta(hours=1)


def upload_refusal(*, user, adding: int, limit: int) -> str | None:
    """Why `adding` more files may not be uploaded now (None: they may; `limit` 0: no
    limit)."""
    if not limit:
        return None
    recent = ChatDocument.objects.filter(
        workflow__owner=user,
        source=ChatDocument.Source.UPLOADED,
        created__gte=timezone.now() - WINDOW,
    )
    wait = _wait(recent, adding, limit)
    if wait is None:
        return None
    files = f"{limit} file{'s' if limit != 1 else ''}"
    return f"Upload limit reached: at most {files} an hour. {wait}"


def round_refusal(*, user, limit: int) -> str | None:
    """Why the user may not start another round now (None: they may; `limit` 0: no
    limit)."""
    if not limit:
        return None
    recent = ChatMessage.objects.filter(
        workflow__owner=user,
        role=ChatMessage.Role.USER,
        created__gte=timezone.now() - WINDOW,
    )
    wait = _wait(recent, 1, limit)
    if wait is None:
        return None
    rounds = f"{limit} message{'s' if limit != 1 else ''}"
    return f"Too many messages: at most {rounds} that start a round an hour. {wait}"


def _wait(recent: QuerySet, adding: int, limit: int) -> str | None:
    """None when `adding` more fit in the window; else when enough of the recent ones
    will have left it."""
    count = recent.count()
    over = count + adding - limit
    if over <= 0:
        return None
    if adding > limit:
        return f"Choose at most {limit} at once."
    oldest = recent.order_by("created").values_list("created", flat=True)[over - 1]
    minutes = max(1, math.ceil((oldest + WINDOW - timezone.now()).total_seconds() / 60))
    return f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
