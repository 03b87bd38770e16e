"""Files a user uploads for their next message, from the page, the API or the MCP server: the
hourly limit counted and the files' rows inserted under one lock per user, then the files
streamed to storage a chunk at a time.

Counting and inserting apart let parallel uploads each count the same hour and all pass (8
uploads of 60 files stored 480 against a limit of 100). Here the count and the rows happen in
one short transaction holding the user's lock (`rates.hold`), so a second upload counts the
first one's rows; the files themselves are written after it, outside any transaction (a
large file would otherwise hold SQLite's one write lock for as long as it takes), each read
in chunks from the temporary file it was received into, never whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.files import File
from django.db import transaction
from django.utils.text import get_valid_filename

from . import media_types, rates
from .models import ChatDocument, ChatWorkflow
from .services import PENDING_UPLOAD_LABEL, safe_name, upload_name

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class UploadLimited(Exception):
    """The hourly upload limit refuses these files; `refusal` says why and when to retry."""

    def __init__(self, refusal: rates.Refusal) -> None:
        super().__init__(refusal)
        self.refusal = refusal


@dataclass(frozen=True)
class Incoming:
    """One file as received: its name and type as the sender gave them, and its content (a
    Django File: an upload's temporary file, or bytes in a ContentFile)."""

    name: str
    mime_type: str
    file: File[bytes]


def store(
    *, workflow: ChatWorkflow, owner: User, files: Sequence[Incoming], limit: int
) -> list[ChatDocument]:
    """Store files for the workflow's next message, within the owner's hourly `limit` (0: no
    limit) however many uploads run at once; raises UploadLimited, storing nothing."""
    documents = reserve(workflow=workflow, owner=owner, files=files, limit=limit)
    try:
        for document, incoming in zip(documents, files, strict=True):
            write(document, incoming.file)
    except BaseException:
        ChatDocument.objects.filter(pk__in=[d.pk for d in documents]).delete()
        raise
    return documents


def reserve(
    *, workflow: ChatWorkflow, owner: User, files: Sequence[Incoming], limit: int
) -> list[ChatDocument]:
    """Count the owner's uploads of the hour and insert the files' rows, under their lock:
    the rows count for every upload after this one at once."""
    with transaction.atomic():
        rates.hold(owner)
        if refusal := rates.upload_refusal(user=owner, adding=len(files), limit=limit):
            raise UploadLimited(refusal)
        documents = []
        for incoming in files:
            name = safe_name(upload_name(incoming.name))
            mime = "" if incoming.mime_type == "application/octet-stream" else incoming.mime_type
            documents.append(
                ChatDocument.objects.create(
                    workflow=workflow,
                    label=PENDING_UPLOAD_LABEL,
                    name=name[:255],
                    mime_type=media_types.clean(mime, name=name),
                    size=incoming.file.size or 0,
                    sha256="",
                    source=ChatDocument.Source.UPLOADED,
                )
            )
        return documents


def write(document: ChatDocument, file: File[bytes]) -> None:
    """Write a reserved document's file to storage a chunk at a time, with its digest."""
    digest = hashlib.sha256()
    size = 0
    file.seek(0)
    for chunk in file.chunks():
        digest.update(chunk)
        size += len(chunk)
    file.seek(0)
    document.file.save(get_valid_filename(document.name), file, save=False)
    document.sha256 = digest.hexdigest()
    document.size = size
    document.save(update_fields=["file", "sha256", "size"])
