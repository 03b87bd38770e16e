"""The AG-UI runs in admin: which workflow and round each thread and run of a front-end is,
read only (they are noted by the endpoint; the rounds themselves are the workflows')."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from .models import AguiRun


@admin.register(AguiRun)
class AguiRunAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
