"""Chat pages: the workflow list, a workflow, new workflows, document downloads."""

from __future__ import annotations

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from . import selectors, services
from .forms import WorkflowCreateForm


def home(request: HttpRequest) -> HttpResponse:
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
def workflow_create(request: HttpRequest) -> HttpResponse:
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


def workflow_detail(request: HttpRequest, workflow_id: int) -> HttpResponse:
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
        },
    )


def document_download(request: HttpRequest, workflow_id: int, document_id: int) -> FileResponse:
    """Download one of the user's documents."""
    document = selectors.document_get(
        user=request.user, workflow_id=workflow_id, document_id=document_id
    )
    return FileResponse(
        document.file.open("rb"),
        as_attachment=True,
        filename=document.name,
        content_type=document.mime_type,
    )
