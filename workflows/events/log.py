"""A workflow's event log: typed events appended under the next seqs of their workflow, in
one short transaction that also keeps the workflow's place and token totals, each read back
through the contract before the transaction commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from workflows.engine.records.events import UsageEvent
from workflows.events.contract import AnyEvent, Envelope, payload_of
from workflows.models import ChatWorkflow, WorkflowEvent


@dataclass(frozen=True)
class NewEvent:
    """An event to append, with its ordinal (its place in its round) when it has one."""

    event: AnyEvent
    ordinal: int | None = None


def event_append(*, workflow_id: int, event: AnyEvent) -> Envelope:
    """Store the next event of a workflow under the next seq (see `events_append`)."""
    return events_append(workflow_id=workflow_id, events=[NewEvent(event)])[0]


def tokens_of(event: AnyEvent) -> tuple[int, int] | None:
    """The (prompt, completion) tokens an event adds to its workflow's totals."""
    if isinstance(event, UsageEvent):
        return (event.promptTokens, event.completionTokens)
    return None


def events_append(*, workflow_id: int, events: Sequence[NewEvent]) -> list[Envelope]:
    """Store events of a workflow under its next seqs, in order, in one transaction of two
    statements however many they are (three where the database lacks UPDATE … RETURNING);
    their envelopes, each validated from the row as stored before the transaction commits,
    so an event that does not fit the contract is never committed.

    The same row update moves the workflow's current task/action to the last event's that
    has one, and adds the usage events' tokens to its totals; each usage event then carries
    the workflow's total after it as `workflowTokens`.
    """
    spends = [tokens_of(new.event) for new in events]
    prompt = sum(spent[0] for spent in spends if spent)
    completion = sum(spent[1] for spent in spends if spent)
    placed = [new.event for new in events if new.event.task]
    with transaction.atomic(savepoint=False):  # inside the caller's transaction if any
        last_seq, total = _seqs_claim(
            workflow_id,
            count=len(events),
            tokens=(prompt, completion),
            place=(placed[-1].task, placed[-1].action) if placed else None,
        )
        seq, tokens = last_seq - len(events), total - prompt - completion
        rows = []
        for new, spent in zip(events, spends, strict=True):
            seq += 1
            event = new.event
            if spent:
                tokens += sum(spent)
                event = event.model_copy(update={"workflowTokens": tokens})
            rows.append(
                WorkflowEvent(
                    workflow_id=workflow_id,
                    seq=seq,
                    type=event.type,
                    round=event.round,
                    task=event.task,
                    action=event.action,
                    payload=payload_of(event),
                    ordinal=new.ordinal,
                )
            )
        stored = WorkflowEvent.objects.bulk_create(rows)
        return [Envelope.from_row(row) for row in stored]


def _seqs_claim(
    workflow_id: int, *, count: int, tokens: tuple[int, int], place: tuple[int, int] | None
) -> tuple[int, int]:
    """Take `count` seqs of a workflow, add tokens, move its current task/action; its last
    seq and token total after. The row update serialises concurrent appends to one workflow
    on every backend; it is one statement where UPDATE … RETURNING exists (PostgreSQL,
    SQLite 3.35+: the ORM would take two, and most of the time of a short transaction)."""
    if not connection.features.can_return_columns_from_insert:  # and so from an update
        updates: dict[str, Any] = {
            "last_seq": F("last_seq") + count,
            "prompt_tokens": F("prompt_tokens") + tokens[0],
            "completion_tokens": F("completion_tokens") + tokens[1],
        }
        if place:
            updates.update(current_task=place[0], current_action=place[1])
        workflow = ChatWorkflow.objects.filter(pk=workflow_id)
        workflow.update(**updates)
        after: tuple[int, int] = workflow.values_list(
            "last_seq", F("prompt_tokens") + F("completion_tokens")
        ).get()
        return after
    q = connection.ops.quote_name
    sets = [f"{q(n)} = {q(n)} + %s" for n in ("last_seq", "prompt_tokens", "completion_tokens")]
    values: list[Any] = [count, *tokens]
    if place:
        sets += [f"{q('current_task')} = %s", f"{q('current_action')} = %s"]
        values += place
    sql = (
        f"UPDATE {q(ChatWorkflow._meta.db_table)} SET {', '.join(sets)} WHERE {q('id')} = %s "
        f"RETURNING {q('last_seq')}, {q('prompt_tokens')} + {q('completion_tokens')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, workflow_id])
        last_seq, total = cursor.fetchone()
    return last_seq, total
