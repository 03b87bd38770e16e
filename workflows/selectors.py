"""Reads: what a user may see. Anything not theirs is a 404, never a 403."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import (
    Count,
    Exists,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from workflows.engine.records.events import ApprovalEvent, AskEvent, UsageEvent

from .models import ChatDocument, ChatMessage, ChatWorkflow, Connection, WorkflowEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def workflow_list(*, user: User) -> QuerySet[ChatWorkflow]:
    """The user's workflows, newest activity first."""
    return ChatWorkflow.objects.filter(owner=user)


class Lowered(Func):
    """A text in lower case, every letter (SQLite's LOWER and LIKE fold only ASCII: "CAFÉ"
    did not find "Café"); on SQLite a function the app registers (`apps.sqlite_lower`)."""

    function = "LOWER"
    output_field = TextField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return super().as_sql(compiler, connection, function="POWERON_LOWER", **extra)


def workflow_search(*, user: User, query: str) -> QuerySet[ChatWorkflow]:
    """The user's workflows whose title or any message (text or summary) holds every word of
    `query` (case-insensitive, for every alphabet), newest activity first; all of them for an
    empty query."""
    workflows = workflow_list(user=user).annotate(lowered_title=Lowered("title"))
    messages = ChatMessage.objects.annotate(
        lowered_content=Lowered("content"), lowered_summary=Lowered("summary")
    )
    for word in query.split()[:8]:
        lowered = Lowered(Value(word))  # by the same function as the text (Python's lower()
        in_messages = messages.filter(  # and PostgreSQL's differ: ς, İ)
            Q(lowered_content__contains=lowered) | Q(lowered_summary__contains=lowered),
            workflow=OuterRef("pk"),
        )
        workflows = workflows.filter(Q(lowered_title__contains=lowered) | Exists(in_messages))
    return workflows


def rounds_hidden(*, message: ChatMessage) -> range:
    """The earlier rounds a user message's round does not see: none for a new message; for one
    that reruns round k, the rounds from k on (a rerun of a rerun goes back to the first)."""
    start, reruns, seen = message.round, message.reruns, set()
    while reruns is not None and reruns < start and reruns not in seen:
        seen.add(reruns)
        start = reruns
        reruns = (
            ChatMessage.objects.filter(
                workflow_id=message.workflow_id, role=ChatMessage.Role.USER, round=start
            )
            .values_list("reruns", flat=True)
            .first()
        )
    return range(start, message.round)


def workflow_get(*, user: User, workflow_id: int) -> ChatWorkflow:
    """One of the user's workflows, or 404."""
    return get_object_or_404(ChatWorkflow, pk=workflow_id, owner=user)


def finished_steps(events: QuerySet[Any] | None = None) -> QuerySet[Any]:
    """The closing events of steps among `events` (every event by default): one per step
    that ended, whether it succeeded, failed, was rejected or was stopped."""
    events = WorkflowEvent.objects.all() if events is None else events
    return events.filter(type="step").exclude(payload__status="started")


def workflow_with_step_count() -> QuerySet[ChatWorkflow]:
    """Workflows annotated with how many steps ended in them (for admin lists): the steps
    `finished_steps` lists, not the action messages (a stopped or rejected step has none)."""
    counted = (
        finished_steps()
        .filter(workflow=OuterRef("pk"))
        .order_by()
        .values("workflow")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return ChatWorkflow.objects.annotate(
        step_count=Coalesce(Subquery(counted, output_field=IntegerField()), 0)
    )


def message_list(*, workflow: ChatWorkflow) -> QuerySet[ChatMessage]:
    """A workflow's messages in the order they were written."""
    return workflow.messages.prefetch_related("documents")


def document_get(*, user: User, workflow_id: int, document_id: int) -> ChatDocument:
    """One of the user's documents, or 404."""
    return get_object_or_404(
        ChatDocument, pk=document_id, workflow_id=workflow_id, workflow__owner=user
    )


def usage_since(*, workflow: ChatWorkflow, since: datetime) -> list[UsageEvent]:
    """The workflow's model calls stored since `since`, read through the contract."""
    rows = workflow.events.filter(type="usage", created__gte=since).order_by("seq")
    return [call for row in rows if isinstance(call := row.envelope.event, UsageEvent)]


def event_list_after(*, workflow_id: int, after_seq: int) -> QuerySet[WorkflowEvent]:
    """The events after `after_seq`, in seq order: what a reconnecting client missed."""
    return WorkflowEvent.objects.filter(workflow_id=workflow_id, seq__gt=after_seq).order_by("seq")


def runs_waiting(*, before_workflow: int) -> int:
    """How many queued runs wait ahead of this workflow's (queued earlier)."""
    mine = ChatWorkflow.objects.filter(pk=before_workflow).values_list("updated", flat=True)
    return ChatWorkflow.objects.filter(
        status=ChatWorkflow.Status.QUEUED, updated__lt=mine[:1]
    ).count()


def open_question(*, workflow_id: int, kind: str) -> tuple[int, int, int] | None:
    """The question of the current round that waits for an answer, as (task, number, asked):
    for "extend" the steps done and which step-limit question of the round it is, for
    "approve" the action. None when nothing waits (an answered one included)."""
    event_type = {"extend": "ask", "approve": "approval"}[kind]
    round = ChatWorkflow.objects.filter(pk=workflow_id).values_list("current_round", flat=True)
    events = WorkflowEvent.objects.filter(workflow_id=workflow_id, round=round[:1], type=event_type)
    last = events.order_by("-seq").first()
    match last.envelope.event if last is not None else None:
        case AskEvent(status="waiting", task=task, stepsDone=done):
            return task, done, events.filter(payload__status="waiting").count()
        case ApprovalEvent(status="waiting", task=task, action=action):
            return task, action, 0
    return None


def waiting_for_user(*, workflow_ids: Iterable[int]) -> set[int]:
    """Of these workflows, those whose run waits for its user: a step-limit question or an
    approval of the current round that nobody has answered yet."""
    return {
        pk
        for pk in workflow_ids
        if open_question(workflow_id=pk, kind="extend")
        or open_question(workflow_id=pk, kind="approve")
    }


def connection_kinds(*, user: User) -> set[str]:
    """The kinds of provider the user holds a connection for (never the secrets)."""
    return set(Connection.objects.filter(owner=user).values_list("kind", flat=True))


def usable_connections(*, user: User) -> list[Connection]:
    """The user's connections a round may use: those whose secret, if any, still opens (one
    the site's keys no longer open sits out until its owner enters it again)."""
    return [c for c in Connection.objects.filter(owner=user) if not c.needs_secret_again]


def connection_list(*, user: User) -> QuerySet[Connection]:
    """The user's connections; templates show label and kind, never the secret."""
    return Connection.objects.filter(owner=user).only(
        "id", "label", "kind", "url", "secret", "created"
    )


def connection_get(*, user: User, connection_id: int) -> Connection:
    """One of the user's connections, or 404."""
    return get_object_or_404(Connection, pk=connection_id, owner=user)


def unreadable_connections() -> list[str]:
    """ "owner/label" of every stored connection secret the site's keys no longer open."""
    connections = Connection.objects.exclude(secret="").select_related("owner")
    return [f"{c.owner.get_username()}/{c.label}" for c in connections if c.needs_secret_again]


def pending_uploads(*, workflow: ChatWorkflow) -> QuerySet[ChatDocument]:
    """The files uploaded to a workflow and not yet sent with a message, oldest first."""
    from workflows.services import PENDING_UPLOAD_LABEL

    return workflow.documents.filter(
        label=PENDING_UPLOAD_LABEL, source=ChatDocument.Source.UPLOADED
    ).order_by("id")
