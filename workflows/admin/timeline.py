"""What the admin shows of a run: read-only inlines of its messages, documents and event
timeline, with each event's tokens, cost and duration, and a filter for quiet runs."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from workflows import pricing
from workflows.engine.model.nature import is_demo
from workflows.engine.records.events import (
    ObserveEvent,
    RoundEvent,
    StepEvent,
    ThoughtEvent,
    UsageEvent,
)
from workflows.models import ChatDocument, ChatMessage, ChatWorkflow, WorkflowEvent


def document_link(document: ChatDocument) -> str:
    url = reverse("admin:workflows_chatdocument_download", args=[document.pk])
    return format_html('<a href="{}">{}</a>', url, document.name)


class ReadOnlyInline(admin.TabularInline[Any, Any]):
    """Inlines that show the record of a run; nobody edits history."""

    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChatMessageInline(ReadOnlyInline):
    model = ChatMessage
    fields = ("round", "task", "action", "role", "action_full_name", "status", "summary", "brief")
    readonly_fields = fields

    @admin.display(description="Content")
    def brief(self, message: ChatMessage) -> str:
        return message.content[:200] + ("…" if len(message.content) > 200 else "")


class ChatDocumentInline(ReadOnlyInline):
    model = ChatDocument
    fields = ("label", "download", "mime_type", "size", "source", "source_url")
    readonly_fields = fields

    @admin.display(description="Document")
    def download(self, document: ChatDocument) -> str:
        return document_link(document)


def event_tokens(row: WorkflowEvent) -> str:
    """What a step, a round or a model call spent, and how much of its prompt the provider read
    from its cache ("" for other events)."""
    match row.envelope.event:
        case UsageEvent() as call:
            return (
                f"{call.promptTokens:,} in ({call.cachedTokens:,} cached) / "
                f"{call.completionTokens:,} out"
            )
        case StepEvent(tokens=tokens, cachedTokens=cached) if tokens:
            return f"{tokens:,} ({cached:,} cached)"
        case RoundEvent(tokens=tokens, cachedTokens=cached) if tokens:
            return f"{tokens:,} ({cached:,} cached)"
    return ""


def spent_cost(event: UsageEvent | StepEvent | ThoughtEvent | RoundEvent) -> str:
    """What a model call, a step, a thought or a round cost, with the cached input apart
    ("demo" for the demo model; "" for a step, thought or round that spent nothing)."""
    if is_demo(event.model):
        return "demo"
    if not isinstance(event, UsageEvent) and not event.tokens:
        return ""
    return pricing.cost_parts(event.cost)


def event_cost(row: WorkflowEvent) -> str:
    """What a model call, a step, a thought or a round cost ("" for events that spend
    nothing)."""
    match row.envelope.event:
        case UsageEvent() | StepEvent() | ThoughtEvent() | RoundEvent() as event:
            return spent_cost(event)
    return ""


def event_duration(row: WorkflowEvent) -> str:
    """How long a step, a thought or a round took, or a model call waited ("" for others)."""
    match row.envelope.event:
        case UsageEvent(latencyMs=ms) | StepEvent(durationMs=ms) | ThoughtEvent(durationMs=ms):
            pass
        case RoundEvent(durationMs=ms) | ObserveEvent(durationMs=ms):
            pass
        case _:
            ms = 0
    return f"{ms:,} ms" if ms else ""


class EventColumns:
    """An event's tokens, cost and duration as admin columns."""

    @admin.display(description="Tokens")
    def tokens(self, event: WorkflowEvent) -> str:
        return event_tokens(event)

    @admin.display(description="Cost")
    def cost(self, event: WorkflowEvent) -> str:
        return event_cost(event)

    @admin.display(description="Duration")
    def duration(self, event: WorkflowEvent) -> str:
        return event_duration(event)


EVENT_COLUMNS = ("seq", "type", "round", "task", "action", "tokens", "cost", "duration")
"""What a list of events shows of each (with EventColumns)."""


class WorkflowEventInline(EventColumns, ReadOnlyInline):
    model = WorkflowEvent
    fields = (*EVENT_COLUMNS, "payload_brief", "created")
    readonly_fields = fields
    ordering = ("seq",)
    show_change_link = False
    verbose_name_plural = "Event timeline"

    @admin.display(description="Payload")
    def payload_brief(self, event: WorkflowEvent) -> str:
        text = json.dumps(event.payload, ensure_ascii=False)
        return text[:300] + ("…" if len(text) > 300 else "")


class QuietRunFilter(admin.SimpleListFilter):
    """Runs said to be going whose heartbeat went quiet: stuck, or waiting for failover."""

    title = "run heartbeat"
    parameter_name = "heartbeat"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]
    ) -> list[tuple[str, str]]:
        return [("quiet", "Going, but quiet past the failover delay"), ("live", "Going, alive")]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[ChatWorkflow]
    ) -> QuerySet[ChatWorkflow]:
        if self.value() not in ("quiet", "live"):
            return queryset
        cutoff = timezone.now() - timedelta(seconds=settings.POWERON_FAILOVER_SECONDS)
        going = queryset.filter(status__in=ChatWorkflow.ACTIVE_STATUSES)
        quiet = Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True)
        return going.filter(quiet) if self.value() == "quiet" else going.exclude(quiet)
