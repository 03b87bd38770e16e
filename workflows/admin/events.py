"""The event log in admin, to read only: every event, and every finished step with its
telemetry (tokens, cache, cost, duration) in columns."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from workflows import pricing, selectors
from workflows.engine.model.nature import is_demo
from workflows.engine.records.events import StepEvent
from workflows.models import StepRecord, WorkflowEvent

from .safety import SecretSafeAdmin
from .timeline import EVENT_COLUMNS, EventColumns, event_duration


@admin.register(WorkflowEvent)
class WorkflowEventAdmin(EventColumns, SecretSafeAdmin[WorkflowEvent]):
    """The record of every run, to read: an event edited or added by hand would no longer
    be what happened (and one that fails its type would stop the workflow's page)."""

    list_display = ("workflow", *EVENT_COLUMNS, "created")
    list_filter = ("type",)
    search_fields = ("workflow__title",)
    list_select_related = ("workflow",)
    raw_id_fields = ("workflow",)
    ordering = ("workflow", "seq")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(StepRecord)
class StepRecordAdmin(SecretSafeAdmin[StepRecord]):
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

    def get_queryset(self, request: HttpRequest) -> QuerySet[StepRecord]:
        # The steps the workflow list counts (its Steps column), by the same definition.
        return selectors.finished_steps(super().get_queryset(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Step")
    def step(self, row: StepRecord) -> int:
        return closed(row).step

    @admin.display(description="Action")
    def method(self, row: StepRecord) -> str:
        return closed(row).method

    @admin.display(description="Status")
    def status(self, row: StepRecord) -> str:
        return closed(row).status

    @admin.display(description="Tokens")
    def tokens(self, row: StepRecord) -> str:
        step = closed(row)
        return "demo" if is_demo(step.model) else f"{step.tokens:,}"

    @admin.display(description="Cached tokens")
    def cached(self, row: StepRecord) -> str:
        step = closed(row)
        return "demo" if is_demo(step.model) else f"{step.cachedTokens:,}"

    @admin.display(description="Cost")
    def cost(self, row: StepRecord) -> str:
        step = closed(row)
        if is_demo(step.model):
            return "demo"
        return "—" if step.cost is None and not step.tokens else pricing.cost_parts(step.cost)

    @admin.display(description="Duration")
    def duration(self, row: StepRecord) -> str:
        return event_duration(row) or "0 ms"


def closed(row: StepRecord) -> StepEvent:
    """A step's closing event, read through the contract (the list holds nothing else)."""
    event = row.envelope.event
    assert isinstance(event, StepEvent), f"not a step: {row}"
    return event
