"""Workflows in admin: their run, usage and cost in columns, their messages, documents and
event timeline inline; deleted through the app's own deletion, never under a live run."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from workflows import pricing, selectors
from workflows.engine.model.nature import is_demo
from workflows.engine.records.events import UsageEvent
from workflows.execution import durable
from workflows.models import ChatWorkflow
from workflows.services import WorkflowBusy

from .deletion import guarded_delete
from .safety import SecretSafeAdmin
from .timeline import ChatDocumentInline, ChatMessageInline, QuietRunFilter, WorkflowEventInline

RUNNING_NOT_DELETED = "This workflow is running; stop it before deleting it."


@admin.action(permissions=["delete"], description="Delete selected chat workflows")
def delete_unless_running(
    modeladmin: ChatWorkflowAdmin, request: HttpRequest, queryset: QuerySet[ChatWorkflow]
) -> HttpResponse | None:
    """Django's delete action (its confirmation page included), refused with nothing deleted
    while one of the selected workflows runs."""
    running = list(queryset.filter(status__in=ChatWorkflow.ACTIVE_STATUSES))
    if running:
        names = ", ".join(f"“{w}”" for w in running)
        modeladmin.message_user(
            request,
            f"Nothing was deleted: {names} {'is' if len(running) == 1 else 'are'} running. "
            "Stop it first, or leave it out of the selection.",
            level=messages.ERROR,
        )
        return None
    return delete_selected(modeladmin, request, queryset)


@admin.register(ChatWorkflow)
class ChatWorkflowAdmin(SecretSafeAdmin[ChatWorkflow]):
    list_display = ("__str__", "owner", "mode", "status", "steps", "tokens", "spent", "created")
    list_filter = ("status", QuietRunFilter, "mode", "created")
    search_fields = ("title", "owner__username", "messages__content")
    list_select_related = ("owner",)
    # The run's state is written by the runner only: editing it under a live run would lie.
    readonly_fields = (
        "status",
        "status_reason",
        "current_round",
        "current_task",
        "current_action",
        "heartbeat",
        "durable_state",
        "last_seq",
        "prompt_tokens",
        "completion_tokens",
        "cached_share",
        "cost_summary",
        "created",
        "updated",
    )
    fieldsets = (
        (None, {"fields": ("owner", "title", "mode", "max_steps")}),
        (
            "Run",
            {
                "fields": (
                    ("status", "status_reason"),
                    ("current_round", "current_task", "current_action"),
                    ("heartbeat", "last_seq"),
                    "durable_state",
                )
            },
        ),
        (
            "Usage",
            {
                "fields": (
                    ("prompt_tokens", "completion_tokens"),
                    "cached_share",
                    "cost_summary",
                    ("created", "updated"),
                )
            },
        ),
    )
    inlines = (ChatMessageInline, ChatDocumentInline, WorkflowEventInline)
    date_hierarchy = "created"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ChatWorkflow]:
        return selectors.workflow_with_step_count()

    def save_model(self, request: HttpRequest, obj: ChatWorkflow, form: Any, change: bool) -> None:
        """Save; a workflow given to another user closes its former owner's sockets and
        streams (they may no longer watch, steer or stop it)."""
        from asgiref.sync import async_to_sync

        from workflows.events import broadcast

        super().save_model(request, obj, form, change)
        if change and "owner" in form.changed_data:
            pk, owner = obj.pk, obj.owner_id
            transaction.on_commit(lambda: async_to_sync(broadcast.reassigned)(pk, owner))

    # Deleting goes through the app's own deletion: its files go with it, the hourly limits
    # keep counting its rounds, its open tabs close; and never under a live run, which is
    # said (the per-object permission Django offers would refuse a whole batch as "no
    # permission", and the page would 403).
    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        workflow = self.get_object(request, unquote(object_id))
        if workflow is not None and workflow.is_active:
            return self._refuse_deletion(request, workflow, RUNNING_NOT_DELETED)
        try:
            return super().delete_view(request, object_id, extra_context)
        except WorkflowBusy as busy:  # a run began since the page was drawn
            return self._refuse_deletion(request, workflow, str(busy))

    def _refuse_deletion(
        self, request: HttpRequest, workflow: ChatWorkflow | None, reason: str
    ) -> HttpResponse:
        self.message_user(request, reason, level=messages.ERROR)
        if workflow is None:
            return redirect("admin:workflows_chatworkflow_changelist")
        return redirect("admin:workflows_chatworkflow_change", workflow.pk)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return guarded_delete(super().get_actions(request), delete_unless_running)

    def delete_model(self, request: HttpRequest, obj: ChatWorkflow) -> None:
        from asgiref.sync import async_to_sync

        from workflows import services
        from workflows.events import broadcast

        pk = obj.pk  # deleting sets obj.pk to None
        services.workflow_delete(workflow=obj)
        transaction.on_commit(lambda: async_to_sync(broadcast.gone)(pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatWorkflow]) -> None:
        busy = []
        for workflow in queryset:
            try:
                with transaction.atomic():
                    self.delete_model(request, workflow)
            except WorkflowBusy:  # a run began since the selection was confirmed
                busy.append(workflow)
        if busy:
            names = ", ".join(f"“{w}”" for w in busy)
            self.message_user(request, f"Not deleted, running: {names}.", level=messages.ERROR)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ChatWorkflow], search_term: str
    ) -> tuple[QuerySet[ChatWorkflow], bool]:
        queryset, _ = super().get_search_results(request, queryset, search_term)
        return queryset.distinct(), False

    @admin.display(description="Durable state of the current round")
    def durable_state(self, workflow: ChatWorkflow) -> str:
        """What DBOS holds for the round (PENDING resumes, ENQUEUED waits for a worker),
        under which id."""
        if not workflow.current_round:
            return "—"
        run = durable.RunRef.of(workflow)
        state = durable.statuses([run]).get(run)
        return f"{state or 'none (never started, or the run state was reset)'} — {run.dbos_id}"

    @admin.display(description="Steps", ordering="step_count")
    def steps(self, workflow: ChatWorkflow) -> int:
        count: int = workflow.step_count  # type: ignore[attr-defined]  # annotated by the queryset
        return count

    @admin.display(description="Tokens")
    def tokens(self, workflow: ChatWorkflow) -> str:
        return f"{workflow.prompt_tokens:,} in / {workflow.completion_tokens:,} out"

    @admin.display(description="Cost", ordering="cost")
    def spent(self, workflow: ChatWorkflow) -> str:
        if workflow.cost_currency:
            return pricing.money(float(workflow.cost), workflow.cost_currency)
        return "price unknown" if workflow.total_tokens else "—"

    @admin.display(description="Cost by kind of token")
    def cost_summary(self, workflow: ChatWorkflow) -> str:
        """The sum of the model calls' known costs, with the cached input apart."""
        calls = model_calls(workflow)
        if not calls:
            return "—"
        if all(is_demo(call.model) for call in calls):
            return "demo"
        unknown = sum(1 for call in calls if call.cost is None)
        text = pricing.cost_parts(pricing.cost_sum(call.cost for call in calls))
        return f"{text}; {unknown} of {len(calls)} calls of unknown price" if unknown else text

    @admin.display(description="Cached prompt tokens")
    def cached_share(self, workflow: ChatWorkflow) -> str:
        """How much of the prompts the provider read from its cache (billed cheaper)."""
        calls = model_calls(workflow)
        prompt = sum(call.promptTokens for call in calls)
        cached = sum(call.cachedTokens for call in calls)
        if not prompt:
            return "—"
        return f"{cached:,} of {prompt:,} ({cached / prompt:.0%}) read from the provider's cache"


def model_calls(workflow: ChatWorkflow) -> list[UsageEvent]:
    """The workflow's model calls, read through the contract."""
    rows = workflow.events.filter(type="usage").order_by("seq")
    return [call for row in rows if isinstance(call := row.envelope.event, UsageEvent)]
