"""The AG-UI runs in admin: which workflow and round each thread and run of a front-end is,
read only (they are noted by the endpoint; the rounds themselves are the workflows')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from .models import AguiRun

if TYPE_CHECKING:  # generic for the checker only: Django's class takes no parameters
    RunAdmin = admin.ModelAdmin[AguiRun]
else:
    RunAdmin = admin.ModelAdmin


@admin.register(AguiRun)
class AguiRunAdmin(RunAdmin):
    list_display = ("thread_id", "run_id", "owner", "workflow_link", "round", "after", "created")
    list_filter = ("created",)
    search_fields = ("thread_id", "run_id", "owner__username")
    list_select_related = ("owner", "workflow")
    readonly_fields = ("owner", "thread_id", "run_id", "workflow", "round", "after", "created")
    fields = readonly_fields

    @admin.display(description="Workflow", ordering="workflow")
    def workflow_link(self, run: AguiRun) -> str:
        url = reverse("admin:workflows_chatworkflow_change", args=[run.workflow_id])
        return format_html('<a href="{}">{}</a>', url, run.workflow)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: AguiRun | None = None) -> bool:
        return False
