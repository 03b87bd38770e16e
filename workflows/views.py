"""Chat pages: the workflow list, a workflow, new workflows, document downloads."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core import signals
from django.core.exceptions import (
    BadRequest,
    PermissionDenied,
    SuspiciousOperation,
    TooManyFilesSent,
)
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Q
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.utils.log import log_response
from django.views.decorators.http import require_POST

from workflows.events import broadcast
from workflows.tools.documents import parse as extract

from . import exports, media_types, rates, selectors, services, uploads
from .execution import tools_panel
from .forms import ConnectionForm, WorkflowCreateForm
from .models import ChatWorkflow

if TYPE_CHECKING:
    from workflows.signed_in import SignedInRequest


CLIENT_ERRORS = (BadRequest, PermissionDenied, SuspiciousOperation, MultiPartParserError)
"""What Django answers as the request's fault (400, 403), never a server error."""


def app_error_pages(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A missing workflow, document or connection shows the app's own 404 page, also with
    DEBUG on (whose own page lists the site's URL patterns); a page that fails shows the app's
    500 page to users with DEBUG on too (logged as Django logs it), and Django's debug page to
    staff, who run the server."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return view(request, *args, **kwargs)
        except Http404:
            return render(request, "404.html", status=404)
        except CLIENT_ERRORS:
            raise  # Django answers them 400 or 403
        except Exception as error:
            if not settings.DEBUG or getattr(request.user, "is_staff", False):
                raise  # Django's own handling: 500.html without DEBUG, its debug page with
            signals.got_request_exception.send(sender=None, request=request)
            response = render(request, "500.html", status=500)
            log_response(
                "%s: %s", "Internal Server Error", request.path,
                response=response, request=request, exception=error,
            )  # fmt: skip
            return response

    return wrapped


@login_not_required
@app_error_pages
def not_found(request: HttpRequest, path: str) -> HttpResponse:
    """An address nothing else serves: the app's 404 page, also with DEBUG on."""
    raise Http404(path)


@app_error_pages
def home(request: SignedInRequest) -> HttpResponse:
    """The user's workflows and a form to start a new one."""
    return render(
        request,
        "workflows/home.html",
        {
            "workflows": selectors.workflow_list(user=request.user),
            "form": WorkflowCreateForm(),
        },
    )


@require_POST
def workflow_create(request: SignedInRequest) -> HttpResponse:
    """Create a workflow with the chosen mode and step limit."""
    form = WorkflowCreateForm(request.POST)
    if not form.is_valid():
        context = {"workflows": selectors.workflow_list(user=request.user), "form": form}
        return render(request, "workflows/home.html", context, status=400)
    workflow = services.workflow_create(
        owner=request.user,
        title=form.cleaned_data["title"],
        mode=form.cleaned_data["mode"],
        max_steps=form.cleaned_data["max_steps"],
    )
    return redirect(workflow)


@app_error_pages
def workflow_detail(request: SignedInRequest, workflow_id: int) -> HttpResponse:
    """One workflow and its stored messages."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    return render(
        request,
        "workflows/detail.html",
        {
            "workflow": workflow,
            "workflows": selectors.workflow_list(user=request.user),
            "messages_list": selectors.message_list(workflow=workflow),
            "form": WorkflowCreateForm(),
            "max_upload_bytes": settings.POWERON_MAX_UPLOAD_BYTES,
            "pending_uploads": selectors.pending_uploads(workflow=workflow),
            "tools": tools_panel.tool_overview(owner=request.user),
        },
    )


@app_error_pages
def document_download(request: SignedInRequest, workflow_id: int, document_id: int) -> FileResponse:
    """Download one of the user's documents."""
    document = selectors.document_get(
        user=request.user, workflow_id=workflow_id, document_id=document_id
    )
    return FileResponse(
        document.file.open("rb"),
        as_attachment=True,
        filename=document.name,
        content_type=media_types.for_download(document.mime_type),
    )


CHUNKED = "Send the files with the body's Content-Length: a chunked upload cannot be read."


@require_POST
def document_upload(request: SignedInRequest, workflow_id: int) -> HttpResponse:
    """Store files for the next message; they join the round that message opens."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    if not request.META.get("CONTENT_LENGTH"):  # Django's form parser reads by the length
        return render(request, "workflows/_uploads.html", {"errors": [CHUNKED]}, status=411)
    try:
        files = request.FILES.getlist("files")
    except TooManyFilesSent:
        most = f"Choose at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files at once."
        return render(request, "workflows/_uploads.html", {"errors": [most]}, status=400)
    limit = settings.POWERON_MAX_UPLOAD_BYTES
    errors = [refusal for upload in files if (refusal := upload_refusal(upload, limit))]
    if not files:
        errors.append("Choose at least one file.")
    if errors:
        return render(request, "workflows/_uploads.html", {"errors": errors}, status=400)
    incoming = [uploads.Incoming(f.name or "", f.content_type or "", f) for f in files]
    try:  # counted under the user's lock, then streamed to storage a chunk at a time
        documents = uploads.store(
            workflow=workflow,
            owner=request.user,
            files=incoming,
            limit=settings.POWERON_MAX_UPLOADS_PER_HOUR,
        )
    except uploads.UploadLimited as limited:
        errors = [limited.refusal]
        return render(request, "workflows/_uploads.html", {"errors": errors}, status=429)
    context = {"documents": documents, "workflow": workflow}
    return render(request, "workflows/_uploads.html", context)


def upload_refusal(upload: UploadedFile, limit: int) -> str:
    """Why a file cannot be attached ("" when it can): larger than the limit, empty, or of a
    type the document readers cannot read (the page says the last two when it is picked)."""
    if upload.size is not None and upload.size > limit:
        return f"{upload.name} is larger than {filesizeformat(limit)}."
    return extract.refusal(upload.name or "", upload.content_type or "", upload.size)


@require_POST
def upload_discard(request: SignedInRequest, workflow_id: int, document_id: int) -> HttpResponse:
    """Take back a file uploaded and not yet sent; its chip goes (an empty answer)."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    if not services.upload_discard(workflow=workflow, document_id=document_id):
        raise Http404("No file waiting to be sent has this id.")
    return HttpResponse("")


@app_error_pages
def workflow_export(request: SignedInRequest, workflow_id: int, fmt: str) -> HttpResponse:
    """The whole workflow as Markdown or JSON: messages, documents and the event timeline."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    if fmt == "json":
        body = json.dumps(exports.workflow_as_json(workflow), indent=2, ensure_ascii=False)
        content_type = "application/json"
    else:
        body = exports.workflow_as_markdown(workflow)
        content_type = "text/markdown; charset=utf-8"
    response = HttpResponse(body, content_type=content_type)
    filename = f"workflow-{workflow.pk}.{'json' if fmt == 'json' else 'md'}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@app_error_pages
def connection_list(request: SignedInRequest) -> HttpResponse:
    """The user's connections (labels and kinds only) and a form to add one."""
    form = ConnectionForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        services.connection_create(
            owner=request.user,
            label=form.cleaned_data["label"],
            kind=form.cleaned_data["kind"],
            secret=form.cleaned_data["secret"],
            url=form.cleaned_data["url"],
        )
        return redirect("workflows:connections")
    context = {
        "connections": selectors.connection_list(user=request.user),
        "connection_form": form,
        "workflows": selectors.workflow_list(user=request.user),
        "form": WorkflowCreateForm(),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "workflows/connections.html", context, status=status)


@app_error_pages
def connection_edit(request: SignedInRequest, connection_id: int) -> HttpResponse:
    """Change one of the user's connections: its server's URL, or its secret (a new token)."""
    connection = selectors.connection_get(user=request.user, connection_id=connection_id)
    form = ConnectionForm(request.POST or None, instance=connection, owner=request.user)
    if request.method == "POST" and form.is_valid():
        services.connection_update(  # as stored: validating wrote the form's values on it
            connection=selectors.connection_get(user=request.user, connection_id=connection_id),
            url=form.cleaned_data["url"],
            secret=form.cleaned_data["secret"],
        )
        messages.success(request, f"Updated the connection {connection.label}.")
        return redirect("workflows:connections")
    context = {
        "connection": connection,
        "connection_form": form,
        "workflows": selectors.workflow_list(user=request.user),
        "form": WorkflowCreateForm(),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "workflows/connection_edit.html", context, status=status)


@require_POST
def connection_delete(request: SignedInRequest, connection_id: int) -> HttpResponse:
    """Remove one of the user's connections."""
    selectors.connection_get(user=request.user, connection_id=connection_id).delete()
    return redirect("workflows:connections")


@require_POST
def workflow_delete(request: SignedInRequest, workflow_id: int) -> HttpResponse:
    """Delete one of the user's workflows (not while it runs)."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    try:
        services.workflow_delete(workflow=workflow)
    except services.WorkflowBusy as busy:
        messages.error(request, str(busy))
        return redirect(workflow)
    async_to_sync(broadcast.gone)(workflow_id)  # its other tabs stop looking live
    messages.success(request, f"Deleted “{workflow}”.")
    return redirect("workflows:home")


@require_POST
def workflow_rename(request: SignedInRequest, workflow_id: int) -> HttpResponse:
    """Rename one of the user's workflows: the new title (and the sidebar's) for HTMX, the
    page again otherwise; an empty or too long title is refused with a message."""
    workflow = selectors.workflow_get(user=request.user, workflow_id=workflow_id)
    try:
        renamed = services.workflow_rename(workflow=workflow, title=request.POST.get("title", ""))
    except (ValueError, rates.Limited) as error:
        if request.headers.get("HX-Request"):
            context = {"workflow": workflow, "error": str(error), "oob": True}  # by the box
            return render(request, "workflows/_title.html", context)
        messages.error(request, str(error))
        return redirect(workflow)
    async_to_sync(broadcast.broadcast)(renamed)  # the workflow's other pages follow
    if request.headers.get("HX-Request"):
        context = {"workflow": workflow, "renamed": True, "oob": True}  # the error clears
        return render(request, "workflows/_title.html", context)
    return redirect(workflow)


WAITING_LABEL = "Waiting for you"


def workflow_statuses(request: SignedInRequest) -> JsonResponse:
    """The statuses of some of the user's workflows (`ids`, comma-separated), for the
    sidebar, which follows every run this way: also those of workflows newer than `newer`
    (created since the page loaded). A run that waits for its user's answer or approval is
    `waiting`, and its label says so."""
    parts = request.GET.get("ids", "").split(",")[:200]
    ids = [int(part) for part in parts if part.isdigit() and len(part) <= 18]
    newer = request.GET.get("newer", "")
    asked = Q(pk__in=ids)
    if newer.isdigit() and len(newer) <= 18:
        asked |= Q(pk__gt=int(newer))
    found = list(selectors.workflow_list(user=request.user).filter(asked)[:200])
    running = [w.pk for w in found if w.status == ChatWorkflow.Status.RUNNING]
    waiting = selectors.waiting_for_user(workflow_ids=running)
    return JsonResponse(
        {
            str(w.pk): {
                "status": w.status,
                "label": WAITING_LABEL if w.pk in waiting else w.get_status_display(),
                "waiting": w.pk in waiting,
            }
            for w in found
        }
    )


def workflow_search(request: SignedInRequest) -> HttpResponse:
    """The sidebar's list of workflows matching `q` in their title or messages (HTMX swaps it
    in as the user types; without HTMX, the home page lists them)."""
    query = request.GET.get("q", "")[:200]
    context = {
        "workflows": selectors.workflow_search(user=request.user, query=query),
        "query": query,
        "current": request.GET.get("current", ""),
    }
    if request.headers.get("HX-Request"):
        return render(request, "workflows/_workflow_list.html", context)
    return render(request, "workflows/home.html", {**context, "form": WorkflowCreateForm()})
