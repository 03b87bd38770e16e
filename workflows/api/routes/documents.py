"""Documents: upload files for the next message (the page's limits and refusals: too large,
empty, or of a type the readers cannot read), take one back, read their metadata and
download them (with the page's download headers)."""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from django.core.exceptions import TooManyFilesSent
from django.http import FileResponse, Http404, HttpRequest
from django.template.defaultfilters import filesizeformat
from ninja import Path, Router, Status

from workflows import media_types, selectors, services, uploads
from workflows.api import shapes
from workflows.api.auth import READ, RUN, caller
from workflows.api.errors import Problem, invalid, rate_limited, responses
from workflows.api.schemas import BIGINT, DocumentList, DocumentOut
from workflows.models import ChatDocument
from workflows.tools.documents import parse

from .workflows import WorkflowId

router = Router(tags=["documents"])

DocumentId = Annotated[int, Path(ge=1, le=BIGINT, description="The document's id.")]

UPLOAD_BODY = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["files"],
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {"type": "string", "format": "binary"},
                        "minItems": 1,
                        "description": "The files, each as a part named `files`.",
                    }
                },
            }
        }
    },
}


@router.post(
    "/workflows/{workflow_id}/uploads",
    response={201: DocumentList},
    auth=RUN,
    operation_id="upload_documents",
    openapi_extra={"requestBody": UPLOAD_BODY, "responses": responses(411, 413, 415, 422, 429)},
)
def upload_documents(request: HttpRequest, workflow_id: WorkflowId) -> Status[dict[str, Any]]:
    """Upload files for the workflow's next message (multipart, field `files`); send their
    ids with it. Every file is checked before any is stored: one refusal stores nothing."""
    user = caller(request).user
    workflow = selectors.workflow_get(user=user, workflow_id=workflow_id)
    if not request.META.get("CONTENT_LENGTH"):  # Django's form parser reads by the length
        raise Problem("length-required", "Send the files with the body's Content-Length.")
    if request.content_type != "multipart/form-data":
        raise Problem(
            "unsupported-media-type",
            f"Uploads are multipart/form-data, not {request.content_type or 'no type'}.",
        )
    try:
        files = request.FILES.getlist("files")
    except TooManyFilesSent:
        most = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        raise Problem("too-large", f"Send at most {most} files at once.") from None
    if not files:
        raise invalid("files", "Choose at least one file (multipart parts named `files`).")
    limit = settings.POWERON_MAX_UPLOAD_BYTES
    if large := [upload.name for upload in files if (upload.size or 0) > limit]:
        raise Problem(
            "too-large",
            f"{', '.join(map(str, large))}: larger than {filesizeformat(limit)}. "
            "Nothing was stored.",
        )
    # The page's refusals, in its words (the readers' own table says what they read): a
    # type no reader reads is a 415, an empty file a 422.
    reasons = [parse.refusal(f.name or "", f.content_type or "", f.size) for f in files]
    if refused := [reason for reason in reasons if reason]:
        told = " ".join([*refused, "Nothing was stored."])
        if any(reason.endswith(parse.UNREADABLE.split("{name}")[1]) for reason in refused):
            raise Problem("unsupported-media-type", told)
        raise invalid("files", told)
    incoming = [uploads.Incoming(f.name or "document", f.content_type or "", f) for f in files]
    try:  # counted under the user's lock, then streamed to storage (the page's way)
        documents = uploads.store(
            workflow=workflow,
            owner=user,
            files=incoming,
            limit=settings.POWERON_MAX_UPLOADS_PER_HOUR,
        )
    except uploads.UploadLimited as limited:
        refusal = limited.refusal
        if refusal.retry_after is None:  # more at once than the hour allows: no wait helps
            raise invalid("files", refusal) from None
        raise rate_limited(refusal, refusal.retry_after) from None
    return Status(201, {"documents": [shapes.document_out(d) for d in documents]})


@router.delete(
    "/workflows/{workflow_id}/uploads/{document_id}",
    response={204: None},
    auth=RUN,
    operation_id="discard_upload",
)
def discard_upload(
    request: HttpRequest, workflow_id: WorkflowId, document_id: DocumentId
) -> Status[None]:
    """Take back a file uploaded and not sent yet (it still counts for the hourly upload
    limit); 404 for any other document."""
    workflow = selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    if not services.upload_discard(workflow=workflow, document_id=document_id):
        raise Http404("No file waiting to be sent has this id.")
    return Status(204, None)


@router.get(
    "/workflows/{workflow_id}/documents",
    response=DocumentList,
    auth=READ,
    operation_id="list_documents",
)
def list_documents(request: HttpRequest, workflow_id: WorkflowId) -> dict[str, Any]:
    """A workflow's documents, oldest first: uploads (sent or waiting), what actions produced
    and what they fetched."""
    workflow = selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    documents = ChatDocument.objects.filter(workflow=workflow).order_by("created", "id")
    return {"documents": [shapes.document_out(d) for d in documents]}


@router.get(
    "/workflows/{workflow_id}/documents/{document_id}",
    response=DocumentOut,
    auth=READ,
    operation_id="get_document",
)
def get_document(
    request: HttpRequest, workflow_id: WorkflowId, document_id: DocumentId
) -> dict[str, Any]:
    """One document's metadata."""
    return shapes.document_out(
        selectors.document_get(
            user=caller(request).user, workflow_id=workflow_id, document_id=document_id
        )
    )


@router.get(
    "/workflows/{workflow_id}/documents/{document_id}/content",
    auth=READ,
    operation_id="document_content",
    openapi_extra={
        "responses": {
            200: {
                "description": "The file, as an attachment, with its stored media type.",
                "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
            }
        }
    },
)
def document_content(
    request: HttpRequest, workflow_id: WorkflowId, document_id: DocumentId
) -> FileResponse:
    """Download a document: always as an attachment under its own name, never shown inline
    (the page's download, with its headers)."""
    document = selectors.document_get(
        user=caller(request).user, workflow_id=workflow_id, document_id=document_id
    )
    return FileResponse(
        document.file.open("rb"),
        as_attachment=True,
        filename=document.name,
        content_type=media_types.for_download(document.mime_type),
    )
