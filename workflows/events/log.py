"""A workflow's event log: events appended under the next seqs of their workflow, in one
short transaction that also keeps the workflow's place and token totals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import F

from workflows.models import ChatWorkflow, WorkflowEvent


@dataclass(frozen=True)
class NewEvent:
    """An event to append: its parts as stored."""

    type: str
    payload: dict[str, Any]
    round: int = 0
    task: int = 0
    action: int = 0
    tokens: tuple[int, int] | None = None
    """(prompt, completion) tokens a usage event adds to the workflow's totals."""
    ordinal: int | None = None


def event_append(
    *,
    workflow_id: int,
    type: str,
    payload: dict[str, Any],
    round: int = 0,
    task: int = 0,
    action: int = 0,
    tokens: tuple[int, int] | None = None,
    ordinal: int | None = None,
) -> WorkflowEvent:
    """Store the next event of a workflow under the next seq (see `events_append`)."""
    event = NewEvent(type, payload, round, task, action, tokens, ordinal)
    return events_append(workflow_id=workflow_id, events=[event])[0]


def events_append(*, workflow_id: int, events: Sequence[NewEvent]) -> list[WorkflowEvent]:
    """Store events of a workflow under its next seqs, in order, in one transaction of two
    statements however many they are (three where the database lacks UPDATE … RETURNING).

    The same row update moves the workflow's current task/action to the last event's that
    has one, and adds the usage events' tokens to its totals; each usage event then carries
    the workflow's total after it as `workflowTokens`.
    """
    prompt = sum(event.tokens[0] for event in events if event.tokens)
    completion = sum(event.tokens[1] for event in events if event.tokens)
    placed = [event for event in events if event.task]
    with transaction.atomic(savepoint=False):  # inside the caller's transaction if any
        last_seq, total = _seqs_claim(
            workflow_id,
            count=len(events),
            tokens=(prompt, completion),
            place=(placed[-1].task, placed[-1].action) if placed else None,
        )
        seq, tokens = last_seq - len(events), total - prompt - completion
        rows = []
        for event in events:
            seq += 1
            payload = event.payload
            if event.tokens:
                tokens += sum(event.tokens)
                payload = {**payload, "workflowTokens": tokens}
            rows.append(
                WorkflowEvent(
                    workflow_id=workflow_id,
                    seq=seq,
                    type=event.type,
                    round=event.round,
                    task=event.task,
                    action=event.action,
                    payload=payload,
                    ordinal=event.ordinal,
                )
            )
        return WorkflowEvent.objects.bulk_create(rows)


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
        return workflow.values_list("last_seq", F("prompt_tokens") + F("completion_tokens")).get()
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
