"""Django admin: inspect workflows, their messages, documents and event timeline (the
inlines and columns in `timeline`, the guard on connection secrets in `safety`)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.http import FileResponse, Http404
from django.shortcuts import redirect
from django.urls import path

from workflows import pricing, selectors
from workflows.engine.demo.policy import DEMO_LABEL
from workflows.execution import durable
from workflows.forms import CONNECTION_KINDS, McpChecks, kept_secret_retargeted
from workflows.models import (
    ChatDocument,
    ChatMessage,
    ChatWorkflow,
    Connection,
    StepRecord,
    WorkflowEvent,
)
from workflows.services import WorkflowBusy

from . import tokens  # noqa: F401  (registers the API tokens' admin)
from .safety import SecretSafeAdmin
from .timeline import (
    EVENT_COLUMNS,
    ChatDocumentInline,
    ChatMessageInline,
    EventColumns,
    QuietRunFilter,
    WorkflowEventInline,
    document_link,
    event_duration,
)

RUNNING_NOT_DELETED = "This workflow is running; stop it before deleting it."


def guarded_delete(actions: dict, guarded) -> dict:
    """An admin's actions with Django's "delete selected" replaced by `guarded` (same name
    and description), which refuses while a run is going."""
    if "delete_selected" in actions:
        _, name, description = actions["delete_selected"]
        actions["delete_selected"] = (guarded, name, description)
    return actions


@admin.action(permissions=["delete"], description="Delete selected chat workflows")
def delete_unless_running(modeladmin, request, queryset):
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
class ChatWorkflowAdmin(SecretSafeAdmin):
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

    def get_queryset(self, request):
        return selectors.workflow_with_step_count()

    # Deleting goes through the app's own deletion: its files go with it, the hourly limits
    # keep counting its rounds, its open tabs close; and never under a live run, which is
    # said (the per-object permission Django offers would refuse a whole batch as "no
    # permission", and the page would 403).
    def delete_view(self, request, object_id, extra_context=None):
        workflow = self.get_object(request, unquote(object_id))
        if workflow is not None and workflow.is_active:
            return self._refuse_deletion(request, workflow, RUNNING_NOT_DELETED)
        try:
            return super().delete_view(request, object_id, extra_context)
        except WorkflowBusy as busy:  # a run began since the page was drawn
            return self._refuse_deletion(request, workflow, str(busy))

    def _refuse_deletion(self, request, workflow, reason: str):
        self.message_user(request, reason, level=messages.ERROR)
        if workflow is None:
            return redirect("admin:workflows_chatworkflow_changelist")
        return redirect("admin:workflows_chatworkflow_change", workflow.pk)

    def get_actions(self, request):
        return guarded_delete(super().get_actions(request), delete_unless_running)

    def delete_model(self, request, obj: ChatWorkflow) -> None:
        from asgiref.sync import async_to_sync

        from workflows import services
        from workflows.events import broadcast

        pk = obj.pk  # deleting sets obj.pk to None
        services.workflow_delete(workflow=obj)
        transaction.on_commit(lambda: async_to_sync(broadcast.gone)(pk))

    def delete_queryset(self, request, queryset) -> None:
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

    def get_search_results(self, request, queryset, search_term):
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
        return workflow.step_count  # type: ignore[attr-defined]

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
        calls = workflow.events.filter(type="usage").values_list("payload", flat=True)
        if not calls:
            return "—"
        if all(call.get("model") == DEMO_LABEL for call in calls):
            return "demo"
        costs = [pricing.cost_from(call.get("cost")) for call in calls]
        unknown = sum(1 for cost in costs if cost is None)
        text = pricing.cost_parts(pricing.cost_sum(costs))
        return f"{text}; {unknown} of {len(costs)} calls of unknown price" if unknown else text

    @admin.display(description="Cached prompt tokens")
    def cached_share(self, workflow: ChatWorkflow) -> str:
        """How much of the prompts the provider read from its cache (billed cheaper)."""
        calls = workflow.events.filter(type="usage").values_list("payload", flat=True)
        prompt = sum(call.get("prompt_tokens", 0) for call in calls)
        cached = sum(call.get("cached_tokens", 0) for call in calls)
        if not prompt:
            return "—"
        return f"{cached:,} of {prompt:,} ({cached / prompt:.0%}) read from the provider's cache"


@admin.register(ChatMessage)
class ChatMessageAdmin(SecretSafeAdmin):
    list_display = (
        "__str__",
        "workflow",
        "role",
        "action_full_name",
        "status",
        "summary",
        "created",
    )
    list_filter = ("role", "status", "created")
    search_fields = ("content", "summary", "workflow__title")
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow",)


@admin.register(ChatDocument)
class ChatDocumentAdmin(SecretSafeAdmin):
    list_display = ("name", "workflow", "label", "mime_type", "size", "source", "download")
    list_filter = ("source", "mime_type")
    search_fields = ("name", "label", "source_url")
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow", "message")
    readonly_fields = ("sha256", "size", "download")

    @admin.display(description="Download")
    def download(self, document: ChatDocument) -> str:
        return document_link(document) if document.pk else "-"

    def get_urls(self):
        view = self.admin_site.admin_view(self.download_view)
        own = [path("<int:pk>/download/", view, name="workflows_chatdocument_download")]
        return own + super().get_urls()

    def download_view(self, request, pk: int):
        """Let staff download any document (owners use the chat's own download link)."""
        if not self.has_view_permission(request):
            raise Http404
        document = ChatDocument.objects.filter(pk=pk).first()
        if document is None:
            raise Http404
        return FileResponse(document.file.open("rb"), as_attachment=True, filename=document.name)


@admin.register(WorkflowEvent)
class WorkflowEventAdmin(EventColumns, SecretSafeAdmin):
    """The record of every run, to read: an event edited or added by hand would no longer
    be what happened (and one that fails its type would stop the workflow's page)."""

    list_display = ("workflow", *EVENT_COLUMNS, "created")
    list_filter = ("type",)
    search_fields = ("workflow__title",)
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow",)
    ordering = ("workflow", "seq")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(StepRecord)
class StepRecordAdmin(SecretSafeAdmin):
    """Every finished step, its telemetry in columns: what it spent and how long it took."""

    list_display = (
        "workflow",
        "round",
        "task",
        "step",
        "method",
        "status",
        "tokens",
        "cached",
        "cost",
        "duration",
        "created",
    )
    search_fields = ("workflow__title", "payload__method")
    list_select_related = ("workflow",)
    # Newest workflow first, then each step in its place; by the workflow's id, as "-workflow"
    # would sort by the workflow's own ordering (its last update, oldest first).
    ordering = ("-workflow_id", "round", "task", "action", "seq")

    def get_queryset(self, request):
        # The steps the workflow list counts (its Steps column), by the same definition.
        return selectors.finished_steps(super().get_queryset(request))

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Step")
    def step(self, event: StepRecord) -> int:
        return event.payload.get("step", 0)

    @admin.display(description="Action")
    def method(self, event: StepRecord) -> str:
        return event.payload.get("method", "")

    @admin.display(description="Status")
    def status(self, event: StepRecord) -> str:
        return event.payload.get("status", "")

    @admin.display(description="Tokens")
    def tokens(self, event: StepRecord) -> str:
        if event.payload.get("model") == DEMO_LABEL:
            return "demo"
        return f"{event.payload.get('tokens', 0):,}"

    @admin.display(description="Cached tokens")
    def cached(self, event: StepRecord) -> str:
        if event.payload.get("model") == DEMO_LABEL:
            return "demo"
        return f"{event.payload.get('cachedTokens', 0):,}"

    @admin.display(description="Cost")
    def cost(self, event: StepRecord) -> str:
        payload = event.payload
        if payload.get("model") == DEMO_LABEL:
            return "demo"
        cost = pricing.cost_from(payload.get("cost"))
        return "—" if cost is None and not payload.get("tokens") else pricing.cost_parts(cost)

    @admin.display(description="Duration")
    def duration(self, event: StepRecord) -> str:
        return event_duration(event) or "0 ms"


class ConnectionAdminForm(McpChecks, forms.ModelForm):
    """Secrets are write-only: the field never renders the stored value. An MCP server is
    checked as on the user's Connections page (its label, its public URL)."""

    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Write-only. Leave blank to keep the stored secret.",
    )
    kind = forms.ChoiceField(choices=CONNECTION_KINDS)
    url = forms.URLField(required=False, max_length=500, assume_scheme="https")

    class Meta:
        model = Connection
        fields = ("owner", "label", "kind", "url", "secret")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # a stored secret stays with its owner and what it is for
            self.fields["owner"].disabled = True
            self.fields["kind"].disabled = True

    def clean(self) -> dict:
        data = super().clean()
        given = data.get("secret", "")
        secret = given or (self.instance.secret if self.instance.pk else "")
        data["secret"] = secret
        if data.get("kind") == "mcp":
            self.check_mcp(data.get("owner"), data.get("label", ""), data.get("url", ""))
            if refusal := kept_secret_retargeted(self.instance, data.get("url", ""), given):
                self.add_error("secret", refusal)
        else:
            if data.get("url"):
                self.add_error("url", "Only an MCP server has a URL.")
            if not secret:
                self.add_error("secret", "This kind of connection needs its secret.")
        return data


@admin.register(Connection)
class ConnectionAdmin(SecretSafeAdmin):
    form = ConnectionAdminForm
    list_display = ("label", "kind", "url", "owner", "created")
    list_filter = ("kind",)
    search_fields = ("label", "url", "owner__username")
    raw_id_fields = ("owner",)


# Users reach connections (`connections__secret`): their admin refuses those lookups too.
User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


def running_of(users) -> list[ChatWorkflow]:
    """The workflows of these users with a run going."""
    return list(
        ChatWorkflow.objects.filter(owner__in=users, status__in=ChatWorkflow.ACTIVE_STATUSES)
    )


@admin.action(permissions=["delete"], description="Delete selected users")
def delete_users_unless_running(modeladmin, request, queryset):
    """Django's delete action for accounts, refused (nothing deleted) while one of theirs
    runs: its run would write into a workflow that is gone."""
    if running := running_of(queryset):
        names = ", ".join(f"“{w}” ({w.owner})" for w in running)
        modeladmin.message_user(
            request, f"Nothing was deleted: {names} running. Stop it first.", level=messages.ERROR
        )
        return None
    return delete_selected(modeladmin, request, queryset)


@admin.register(User)
class SecretSafeUserAdmin(SecretSafeAdmin, UserAdmin):
    """Django's user admin, without lookups that reach a connection's secret; an account
    with a run going is not deleted (as a workflow with a run going is not)."""

    def delete_view(self, request, object_id, extra_context=None):
        user = self.get_object(request, unquote(object_id))
        if user is not None and (running := running_of([user])):
            names = ", ".join(f"“{w}”" for w in running)
            self.message_user(
                request,
                f"The account {user} has a run going ({names}); stop the run before deleting it.",
                level=messages.ERROR,
            )
            return redirect("admin:auth_user_change", user.pk)
        return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request):
        return guarded_delete(super().get_actions(request), delete_users_unless_running)
