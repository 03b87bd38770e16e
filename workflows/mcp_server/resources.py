"""Resources: a workflow's Markdown export and each of its documents, under poweron:// URIs,
listed and read for their owner only (anyone else's, or none at all, is "not found")."""

from __future__ import annotations

import base64
import re
from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from django.db.models import QuerySet
from django.http import Http404
from mcp.shared.exceptions import MCPError

from workflows import exports, selectors
from workflows.models import ChatDocument, ChatWorkflow
from workflows.services import PENDING_UPLOAD_LABEL

EXPORT = "poweron://workflows/{workflow}/export.md"
DOCUMENT = "poweron://workflows/{workflow}/documents/{document}"
URI = re.compile(r"poweron://workflows/(\d{1,19})/(?:(export\.md)|documents/(\d{1,19}))")
PAGE = 20
"""Workflows per page of resources/list (each with its export and documents)."""
TEXT_TYPES = ("application/json", "application/xml", "application/javascript", "image/svg+xml")

TEMPLATES = [
    types.ResourceTemplate(
        name="workflow-export",
        title="A workflow as Markdown",
        uri_template=EXPORT,
        description="The whole workflow as a readable transcript: each round's messages, "
        "action summaries and documents, with what each round and step spent.",
        mime_type="text/markdown",
    ),
    types.ResourceTemplate(
        name="workflow-document",
        title="A workflow's document",
        uri_template=DOCUMENT,
        description="A document of a workflow (uploaded, produced by an action, or fetched), "
        "with its own media type: text as text, anything else base64.",
    ),
]


def export_uri(workflow_id: int) -> str:
    return EXPORT.format(workflow=workflow_id)


def document_uri(document: ChatDocument) -> str:
    return DOCUMENT.format(workflow=document.workflow_id, document=document.pk)


def document_resource(document: ChatDocument) -> types.Resource:
    """A document as resources/list shows it."""
    return types.Resource(
        uri=document_uri(document),
        name=document.name,
        description=f"{document.get_source_display()} in round {document.round} of workflow "
        f"{document.workflow_id}",
        mime_type=document.mime_type,
        size=document.size,
    )


def export_resource(workflow: ChatWorkflow) -> types.Resource:
    return types.Resource(
        uri=export_uri(workflow.pk),
        name=f"workflow-{workflow.pk}.md",
        title=str(workflow),
        description=f"Workflow {workflow.pk} as Markdown ({workflow.get_status_display()}).",
        mime_type="text/markdown",
    )


def not_found(uri: str) -> MCPError:
    return MCPError(
        code=types.INVALID_PARAMS, message=f"Resource not found: {uri}", data={"uri": uri}
    )


def listed_documents(workflow: ChatWorkflow) -> QuerySet[ChatDocument]:
    """A workflow's documents as listed: every one but uploads not sent yet."""
    return workflow.documents.exclude(label=PENDING_UPLOAD_LABEL).order_by("created", "id")


@database_sync_to_async
def list_resources(user: Any, cursor: str | None) -> types.ListResourcesResult:
    """A page of the user's resources: workflows newest activity first, each with its export
    and its documents."""
    try:
        offset = max(0, int(cursor or 0))
    except ValueError:
        raise MCPError(code=types.INVALID_PARAMS, message="Unknown cursor.") from None
    workflows = list(selectors.workflow_list(user=user)[offset : offset + PAGE + 1])
    listed: list[types.Resource] = []
    for workflow in workflows[:PAGE]:
        listed.append(export_resource(workflow))
        listed += [document_resource(d) for d in listed_documents(workflow)]
    more = str(offset + PAGE) if len(workflows) > PAGE else None
    return types.ListResourcesResult(resources=listed, next_cursor=more)


@database_sync_to_async
def read_resource(user: Any, uri: str) -> types.ReadResourceResult:
    """A resource's contents: the export as Markdown text, a document as text or base64."""
    match = URI.fullmatch(uri)
    if match is None:
        raise not_found(uri)
    workflow_id = int(match[1])
    try:
        if match[2]:
            workflow = selectors.workflow_get(user=user, workflow_id=workflow_id)
            text = exports.workflow_as_markdown(workflow)
            contents: Any = types.TextResourceContents(
                uri=uri, text=text, mime_type="text/markdown"
            )
        else:
            document = selectors.document_get(
                user=user, workflow_id=workflow_id, document_id=int(match[3])
            )
            contents = document_contents(document, uri)
    except Http404:
        raise not_found(uri) from None
    return types.ReadResourceResult(contents=[contents])


def is_text(mime: str) -> bool:
    return mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml"))


def document_contents(
    document: ChatDocument, uri: str | None = None
) -> types.TextResourceContents | types.BlobResourceContents:
    """A document's bytes as resource contents: text when it is text, base64 otherwise."""
    with document.file.open("rb") as handle:
        data = handle.read()
    uri = uri or document_uri(document)
    if is_text(document.mime_type):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return types.TextResourceContents(uri=uri, text=text, mime_type=document.mime_type)
    blob = base64.b64encode(data).decode("ascii")
    return types.BlobResourceContents(uri=uri, blob=blob, mime_type=document.mime_type)


@database_sync_to_async
def complete(user: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
    """Values for a resource template's argument: the user's workflow ids, or the document
    ids of the workflow already chosen (nothing for anything else)."""
    values: list[str] = []
    typed = params.argument.value.strip()
    if isinstance(params.ref, types.ResourceTemplateReference) and (typed.isdigit() or not typed):
        if params.argument.name == "workflow":
            ids = selectors.workflow_list(user=user).values_list("pk", flat=True)
            values = [str(pk) for pk in ids if str(pk).startswith(typed)]
        elif params.argument.name == "document" and params.ref.uri == DOCUMENT:
            chosen = ((params.context and params.context.arguments) or {}).get("workflow", "")
            found = ChatDocument.objects.filter(workflow__owner=user).exclude(
                label=PENDING_UPLOAD_LABEL
            )
            if chosen.isdigit():
                found = found.filter(workflow_id=int(chosen))
            documents = found.order_by("-id").values_list("pk", flat=True)
            values = [str(pk) for pk in documents if str(pk).startswith(typed)]
    shown = values[:100]
    completion = types.Completion(values=shown, total=len(values), has_more=len(values) > 100)
    return types.CompleteResult(completion=completion)
