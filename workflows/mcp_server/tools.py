"""What the tools do, through the same services and selectors as the page and the HTTP API:
list and read the caller's workflows, stop a run, and open run_task's round (following it
is in `following`). Each tool checks the token's scope: `read` to see, `run` to change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.files.base import ContentFile
from django.http import Http404
from mcp.server import ServerRequestContext

from workflows import rates, selectors, services, uploads
from workflows.api import shapes
from workflows.api.auth import Principal
from workflows.execution import launcher
from workflows.models import ChatMessage, ChatWorkflow

from .caller import ToolRefused, require
from .resources import document_uri, export_uri, listed_documents
from .schemas import (
    DocumentOut,
    InlineDocument,
    ListWorkflowsIn,
    Mode,
    Question,
    RunTaskIn,
    StopOut,
    WorkflowDetail,
    WorkflowIn,
    WorkflowList,
    WorkflowSummary,
)

LAST_ANSWER_CHARS = 4000


def site_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """The site's address as the client reached it (for links to pages)."""
    return str(ctx.request.base_url).rstrip("/") if ctx.request is not None else ""


def document_out(document: Any) -> DocumentOut:
    return DocumentOut(
        id=document.pk,
        name=document.name,
        mimeType=document.mime_type,
        size=document.size,
        source=document.source,
        round=document.round,
        uri=document_uri(document),
    )


def owned(user: Any, workflow_id: int) -> ChatWorkflow:
    try:
        return selectors.workflow_get(user=user, workflow_id=workflow_id)
    except Http404:
        raise ToolRefused(f"You have no workflow {workflow_id}.") from None


@database_sync_to_async
def list_workflows(principal: Principal, args: ListWorkflowsIn) -> WorkflowList:
    """The caller's workflows, newest activity first (searched with `query`)."""
    require(principal, "read")
    user = principal.user
    found = (
        selectors.workflow_search(user=user, query=args.query)
        if args.query.strip()
        else selectors.workflow_list(user=user)
    )
    page = found[args.offset : args.offset + args.limit]
    return WorkflowList(
        workflows=[
            WorkflowSummary(
                id=w.pk,
                title=str(w),
                mode=cast(Mode, w.mode),
                status=w.status,
                currentRound=w.current_round,
                updated=w.updated,
            )
            for w in page
        ],
        count=found.count(),
        limit=args.limit,
        offset=args.offset,
    )


@database_sync_to_async
def get_workflow(principal: Principal, args: WorkflowIn, site: str) -> WorkflowDetail:
    """One of the caller's workflows: where it stands, what it was last asked and answered,
    and its documents."""
    require(principal, "read")
    workflow = owned(principal.user, args.workflow)
    run = shapes.run_out(workflow)
    question = None
    if run["question"] is not None:
        payload = run["question"]["event"]["payload"]
        kind = run["question"]["kind"]
        text = payload.get("question") or f"Approve {payload.get('method', 'the action')}?"
        question = Question(kind=kind, text=text)
    messages = workflow.messages.order_by("-created", "-id")
    last_task = messages.filter(role=ChatMessage.Role.USER).first()
    last_answer = messages.filter(role=ChatMessage.Role.ASSISTANT, action=0).first()
    return WorkflowDetail(
        id=workflow.pk,
        title=str(workflow),
        mode=cast(Mode, workflow.mode),
        status=run["status"],
        statusReason=workflow.status_reason,
        currentRound=workflow.current_round,
        rounds=workflow.current_round,
        lastTask=last_task.content if last_task else "",
        lastAnswer=(last_answer.content if last_answer else "")[:LAST_ANSWER_CHARS],
        question=question,
        tokens=workflow.prompt_tokens + workflow.completion_tokens,
        documents=[document_out(d) for d in listed_documents(workflow)],
        export=export_uri(workflow.pk),
        page=site + workflow.get_absolute_url(),
        updated=workflow.updated,
    )


async def stop_run(principal: Principal, args: WorkflowIn) -> StopOut:
    """Stop the workflow's run now (the model call and the tool in flight are cancelled; what
    it did is kept)."""
    require(principal, "run")
    await database_sync_to_async(owned)(principal.user, args.workflow)
    try:
        await launcher.request_stop(workflow_id=args.workflow)
    except launcher.CommandRefused as refused:
        raise ToolRefused(str(refused)) from refused
    status = (
        await ChatWorkflow.objects.filter(pk=args.workflow).values_list("status", flat=True).aget()
    )
    return StopOut(workflow=args.workflow, status=status, message="Stop requested; what the "
                   "run did is kept.")  # fmt: skip


@dataclass(frozen=True)
class Opened:
    """A round run_task started: its workflow, the seq it starts after, its round."""

    workflow: ChatWorkflow
    after: int
    round: int


@database_sync_to_async
def prepare(principal: Principal, args: RunTaskIn) -> tuple[ChatWorkflow, bool, list[int]]:
    """The round's workflow (the named one, or a new one) and its documents' ids (inline files
    stored as uploads first, under the page's limits); whether the workflow is new."""
    user = principal.user
    inline = [d for d in args.documents if isinstance(d, InlineDocument)]
    ids = [d.uploadId for d in args.documents if not isinstance(d, InlineDocument)]
    if ids and args.workflow is None:
        raise ToolRefused("An uploadId is an upload of a workflow: name that `workflow` too.")
    limit = settings.POWERON_MAX_UPLOAD_BYTES
    if large := [d.name for d in inline if len(d.data) > limit]:
        raise ToolRefused(f"{', '.join(large)}: larger than {limit:,} bytes.")
    if inline and (  # said before a workflow is made (counted again, locked, when stored)
        refusal := rates.upload_refusal(
            user=user, adding=len(inline), limit=settings.POWERON_MAX_UPLOADS_PER_HOUR
        )
    ):
        raise ToolRefused(str(refusal))
    if args.workflow is not None:
        workflow, created = owned(user, args.workflow), False
    else:
        title = args.task.strip().splitlines()[0][:80]
        workflow, created = services.workflow_create(owner=user, title=title, mode=args.mode), True
    incoming = [
        uploads.Incoming(d.name, d.mimeType, ContentFile(d.data, name=d.name)) for d in inline
    ]
    try:  # counted under the user's lock, as the page's uploads are
        stored = uploads.store(
            workflow=workflow,
            owner=user,
            files=incoming,
            limit=settings.POWERON_MAX_UPLOADS_PER_HOUR,
        )
    except uploads.UploadLimited as limited:
        if created:
            services.workflow_delete(workflow=workflow)
        raise ToolRefused(str(limited.refusal)) from None
    ids += [document.pk for document in stored]
    return workflow, created, ids


async def open_round(principal: Principal, args: RunTaskIn) -> Opened:
    """Start run_task's round as a message sent from the page would (the same launcher,
    limits and durable run). Refused: nothing stays of it (a new workflow goes too)."""
    require(principal, "run")
    workflow, created, document_ids = await prepare(principal, args)
    after = workflow.last_seq
    try:
        await launcher.start_round(
            workflow_id=workflow.pk, user=principal.user, text=args.task, document_ids=document_ids
        )
    except launcher.CommandRefused as refused:
        if created:
            await database_sync_to_async(services.workflow_delete)(workflow=workflow)
        raise ToolRefused(str(refused)) from refused
    started = await ChatWorkflow.objects.aget(pk=workflow.pk)
    return Opened(workflow=started, after=after, round=started.current_round)
