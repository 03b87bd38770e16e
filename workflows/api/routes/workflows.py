"""Workflows: list (paged, searched), create, read, rename, delete, export; and who calls."""

from __future__ import annotations

import json
from typing import Annotated, Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import Path, Query, Router, Status
from pydantic import AfterValidator

from workflows import exports, rates, selectors, services
from workflows.api import shapes
from workflows.api.auth import READ, RUN, caller
from workflows.api.errors import Problem, invalid, rate_limited, responses
from workflows.api.schemas import (
    BIGINT,
    NO_NUL,
    MeOut,
    WorkflowCreateIn,
    WorkflowOut,
    WorkflowPage,
    WorkflowRenameIn,
    readable,
)
from workflows.events import broadcast
from workflows.forms import WorkflowCreateForm

router = Router(tags=["workflows"])

WorkflowId = Annotated[int, Path(ge=1, le=BIGINT, description="The workflow's id.")]
RoundNumber = Annotated[int, Path(ge=1, le=2**31 - 1, description="A round's number.")]


@router.get("/me", response=MeOut, auth=READ, operation_id="me", summary="Who calls")
def me(request: HttpRequest) -> dict[str, Any]:
    """Who the caller is, and the token the request came with."""
    principal = caller(request)
    token = principal.token
    return {
        "username": principal.user.get_username(),
        "token": None
        if token is None
        else {
            "name": token.name,
            "prefix": token.prefix,
            "scopes": token.scopes,
            "expires": token.expires,
            "created": token.created,
        },
    }


@router.get("/workflows", response=WorkflowPage, auth=READ, operation_id="list_workflows")
def list_workflows(
    request: HttpRequest,
    q: Annotated[
        str,
        Query(max_length=200, pattern=NO_NUL, description="Words every match holds."),
        AfterValidator(readable),
    ] = "",
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> dict[str, Any]:
    """The caller's workflows, newest activity first; with `q`, those whose title or any
    message holds every word of it (case-insensitive), as the sidebar's search finds them."""
    user = caller(request).user
    found = (
        selectors.workflow_search(user=user, query=q) if q else selectors.workflow_list(user=user)
    )
    items = [shapes.workflow_out(w) for w in found[offset : offset + limit]]
    return {"items": items, "count": found.count(), "limit": limit, "offset": offset}


@router.post(
    "/workflows",
    response={201: WorkflowOut},
    auth=RUN,
    operation_id="create_workflow",
    openapi_extra={"responses": responses(422)},
)
def create_workflow(request: HttpRequest, payload: WorkflowCreateIn) -> Status[dict[str, Any]]:
    """Create an idle workflow in a mode, with a step limit per task."""
    form = WorkflowCreateForm(
        {
            "title": payload.title,
            "mode": payload.mode,
            "max_steps": payload.maxSteps or settings.POWERON_MAX_STEPS,
        }
    )
    if not form.is_valid():  # the page's own rules, named by the API's field names
        names = {"max_steps": "maxSteps"}
        field, problems = next(iter(form.errors.items()))
        raise invalid(names.get(field, field), " ".join(str(p) for p in problems))
    workflow = services.workflow_create(
        owner=caller(request).user,
        title=form.cleaned_data["title"],
        mode=form.cleaned_data["mode"],
        max_steps=form.cleaned_data["max_steps"],
    )
    return Status(201, shapes.workflow_out(workflow))


@router.get(
    "/workflows/{workflow_id}", response=WorkflowOut, auth=READ, operation_id="get_workflow"
)
def get_workflow(request: HttpRequest, workflow_id: WorkflowId) -> dict[str, Any]:
    """One of the caller's workflows."""
    return shapes.workflow_out(
        selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    )


@router.patch(
    "/workflows/{workflow_id}",
    response=WorkflowOut,
    auth=RUN,
    operation_id="rename_workflow",
    openapi_extra={"responses": responses(422)},
)
async def rename_workflow(
    request: HttpRequest, workflow_id: WorkflowId, payload: WorkflowRenameIn
) -> dict[str, Any]:
    """Give a workflow a new title; its open pages follow."""
    user = caller(request).user
    workflow = await database_sync_to_async(selectors.workflow_get)(
        user=user, workflow_id=workflow_id
    )
    try:
        renamed = await database_sync_to_async(services.workflow_rename)(
            workflow=workflow, title=payload.title
        )
    except ValueError as error:
        raise invalid("title", str(error)) from error
    except rates.Limited as limited:
        raise rate_limited(str(limited.refusal), limited.retry_after) from None
    await broadcast.broadcast(renamed)
    return shapes.workflow_out(workflow)


@router.delete(
    "/workflows/{workflow_id}",
    response={204: None},
    auth=RUN,
    operation_id="delete_workflow",
    openapi_extra={"responses": responses(409)},
)
async def delete_workflow(request: HttpRequest, workflow_id: WorkflowId) -> Status[None]:
    """Delete a workflow with its messages, events and documents (not while it runs)."""
    user = caller(request).user
    workflow = await database_sync_to_async(selectors.workflow_get)(
        user=user, workflow_id=workflow_id
    )
    try:
        await database_sync_to_async(services.workflow_delete)(workflow=workflow)
    except services.WorkflowBusy as busy:
        raise Problem("already-running", str(busy)) from busy
    await broadcast.gone(workflow_id)  # its open pages stop looking live
    return Status(204, None)


EXPORTED = {
    "json": ("application/json", "json"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
}


def _export(request: HttpRequest, workflow_id: int, kind: str) -> HttpResponse:
    workflow = selectors.workflow_get(user=caller(request).user, workflow_id=workflow_id)
    if kind == "json":
        body = json.dumps(exports.workflow_as_json(workflow), indent=2, ensure_ascii=False)
    else:
        body = exports.workflow_as_markdown(workflow)
    content_type, extension = EXPORTED[kind]
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="workflow-{workflow.pk}.{extension}"'
    return response


@router.get(
    "/workflows/{workflow_id}/export/json",
    auth=READ,
    operation_id="export_workflow_json",
    openapi_extra={
        "responses": {
            200: {
                "description": "The whole workflow.",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        }
    },
)
def export_workflow_json(request: HttpRequest, workflow_id: WorkflowId) -> HttpResponse:
    """The whole workflow as JSON, as the page exports it: messages, documents' metadata and
    every event."""
    return _export(request, workflow_id, "json")


@router.get(
    "/workflows/{workflow_id}/export/markdown",
    auth=READ,
    operation_id="export_workflow_markdown",
    openapi_extra={
        "responses": {
            200: {
                "description": "A readable transcript.",
                "content": {"text/markdown": {"schema": {"type": "string"}}},
            }
        }
    },
)
def export_workflow_markdown(request: HttpRequest, workflow_id: WorkflowId) -> HttpResponse:
    """The whole workflow as a readable Markdown transcript, as the page exports it."""
    return _export(request, workflow_id, "markdown")
