"""Storing events: each becomes a WorkflowEvent plus the rows it concerns.

Runs in a worker thread (database_sync_to_async). The events of one batch — what a round
emitted between two waits on the model or a tool — are stored in one short transaction,
each under its own seq. Stored events are read back into their typed envelopes inside the
transaction, so an event that does not fit the contract is never committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from django.db import IntegrityError, connection, transaction
from django.db.models import F

from workflows.engine.model.money import Cost
from workflows.engine.records.events import MessageEvent, UsageEvent
from workflows.events import log as event_log
from workflows.events.contract import (
    FINAL_STATUSES,
    AnyEvent,
    Envelope,
    NoticeEvent,
    RunEvent,
)
from workflows.models import ChatDocument, ChatMessage, ChatWorkflow, WorkflowEvent

Pending = tuple[AnyEvent, int | None]
"""An event to store, with its ordinal (its place in its round) or None."""


def record(workflow_id: int, event: AnyEvent, *, ordinal: int | None = None) -> Envelope | None:
    """Store one event and the rows it concerns; its envelope, ready to broadcast.

    With an `ordinal` (its place in its round), an event already stored is not stored again
    (None is returned): a resumed round replays its events without repeating them.
    """
    stored = record_many(workflow_id, [(event, ordinal)])
    return stored[0] if stored else None


def record_many(workflow_id: int, events: Sequence[Pending]) -> list[Envelope]:
    """Store events in order in one transaction; the envelopes of those newly stored (an
    event with an ordinal that is stored already is skipped), ready to broadcast.

    Optimistic: a round stores its events once, so they are inserted without looking first;
    only when the database refuses an ordinal it holds (a resumed round replaying its
    history) is the batch stored again, skipping what is there.
    """
    assert not any(isinstance(event, NoticeEvent) for event, _ in events), "never stored"
    try:
        return _record(workflow_id, events, skip=set())
    except IntegrityError:
        if all(ordinal is None for _, ordinal in events):
            raise
    return _record(workflow_id, events, skip=already_stored(workflow_id, events))


def _record(
    workflow_id: int, events: Sequence[Pending], *, skip: set[tuple[int, int | None]]
) -> list[Envelope]:
    with transaction.atomic():
        events = [pair for pair in events if not _after_the_end(workflow_id, pair[0])]
        fresh = [e for e, o in events if o is None or (e.round, o) not in skip]
        costs = [e.cost for e in fresh if isinstance(e, UsageEvent) and e.cost is not None]
        spent = workflow_cost_add(workflow_id, costs) if costs else 0.0
        new = []
        for event, ordinal in events:
            if ordinal is not None and (event.round, ordinal) in skip:
                continue
            match event:
                case UsageEvent(cost=Cost() as cost):
                    spent = round(spent + cost.total, 9)
                    event = event.model_copy(update={"workflowCost": spent})
                case MessageEvent(messageId=None):
                    message = message_store(workflow_id, event)
                    event = event.model_copy(update={"messageId": message.pk})
            new.append(event_log.NewEvent(event, ordinal))
        if not new:
            return []
        return event_log.events_append(workflow_id=workflow_id, events=new)


def _after_the_end(workflow_id: int, event: AnyEvent) -> bool:
    """Whether `event` says a round goes on (running, queued, stopping) although the round
    has ended: a round resumed after a crash that came just after its end, or a stop that
    crossed the end, must not make an ended run look alive again. The workflow's row is
    locked first (a final status is stored under the same lock)."""
    if not isinstance(event, RunEvent) or event.status in FINAL_STATUSES:
        return False
    ChatWorkflow.objects.select_for_update().filter(pk=workflow_id).values_list("pk").first()
    return WorkflowEvent.objects.filter(
        workflow_id=workflow_id, round=event.round, type="run", payload__status__in=FINAL_STATUSES
    ).exists()


def workflow_cost_add(workflow_id: int, costs: Sequence[Cost]) -> float:
    """Add model calls' costs to the workflow's; its cost before them. One statement where
    the database has UPDATE … RETURNING (an event batch holds a model call at most times)."""
    added = Decimal(str(round(sum(cost.total for cost in costs), 9)))
    currency = costs[-1].currency
    if not connection.features.can_return_columns_from_insert:  # and so from an update
        workflow = ChatWorkflow.objects.filter(pk=workflow_id)
        workflow.update(cost=F("cost") + added, cost_currency=currency)
        after = workflow.values_list("cost", flat=True).get()
    else:
        q = connection.ops.quote_name
        sql = (
            f"UPDATE {q(ChatWorkflow._meta.db_table)} SET {q('cost')} = {q('cost')} + %s, "
            f"{q('cost_currency')} = %s WHERE {q('id')} = %s RETURNING {q('cost')}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [added, currency, workflow_id])
            (after,) = cursor.fetchone()
    return round(float(after) - float(added), 9)


def already_stored(workflow_id: int, events: Sequence[Pending]) -> set[tuple[int, int | None]]:
    """The (round, ordinal) pairs among `events` that are stored (one query)."""
    ordinals = {ordinal for _, ordinal in events if ordinal is not None}
    rounds = {event.round for event, ordinal in events if ordinal is not None}
    stored = WorkflowEvent.objects.filter(
        workflow_id=workflow_id, round__in=rounds, ordinal__in=ordinals
    )
    return set(stored.order_by().values_list("round", "ordinal"))


def message_store(workflow_id: int, event: MessageEvent) -> ChatMessage:
    """A complete message from the engine: an action's record or the final answer."""
    message = ChatMessage.objects.create(
        workflow_id=workflow_id,
        role=event.role,
        round=event.round,
        task=event.task,
        action=event.action,
        action_method=event.method,
        action_name=event.name,
        status=event.status,
        content=event.content,
        summary=event.summary,
        documents_label=event.documentsLabel,
        success=event.success,
        learnings=event.learnings,
    )
    if event.documentsLabel:
        ChatDocument.objects.filter(workflow_id=workflow_id, label=event.documentsLabel).update(
            message=message
        )
    return message
