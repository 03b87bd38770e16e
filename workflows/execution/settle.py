"""How a run ends, every way it can: its open work closed and its final status recorded.

One path for a run that finished, was stopped or failed (called by the runner) and for a run
that can no longer run (found by `settle_runs`): what the round left open — a task, a step,
a question, an answer being streamed — is closed from its stored events, then the final
status is stored as the round's last event, once. A run DBOS will resume is never settled.
The caller broadcasts what was stored.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workflows.engine.loop.closing import Ending, OpenWork
from workflows.engine.records.events import DocumentEvent, RoundEvent
from workflows.events.contract import (
    FINAL_STATUSES,
    Envelope,
    FinalStatus,
    RunEvent,
    engine_event,
)
from workflows.models import ChatWorkflow

from . import durable, recording

CUT_OFF_REASON = "The run was cut off before it could start; what it did is kept."
CUT_OFF_REASONS = {
    "ERROR": "The run failed in a way it cannot resume from; what it did is kept.",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": (
        "The run was interrupted too many times and is given up; what it did is kept."
    ),
    "CANCELLED": "The run was cancelled; what it did is kept.",
    "SUCCESS": "The run ended without recording how; what it did is kept.",
}


def unannounced_documents(workflow: ChatWorkflow, announced: set[str]) -> list[DocumentEvent]:
    """The documents the round's actions wrote that no event showed yet (a stop between a
    document's write and its event): they exist, so the page and the exports show them."""
    written = workflow.documents.filter(round=workflow.current_round, key__isnull=False)
    events = []
    for document in written.order_by("id"):
        ref = document.as_ref()
        key = document.key or ""  # filtered on: never empty here
        round, task, action, _ = (int(part) for part in key.split(":"))
        if ref.id not in announced:
            events.append(DocumentEvent(round=round, task=task, action=action, document=ref))
    return events


def run_end(workflow_id: int, status: FinalStatus, reason: str = "") -> list[Envelope]:
    """Close what the run's round left open and record its final status; the stored events.

    A stop without a reason was asked for by the user when the workflow says "stopping";
    otherwise the server stopped under it.
    """
    with transaction.atomic():
        workflow = ChatWorkflow.objects.select_for_update().get(pk=workflow_id)
        finals = workflow.events.filter(round=workflow.current_round, type="run")
        if finals.filter(payload__status__in=FINAL_STATUSES).exists():
            return []  # ended already (a resumed round that had finished, a second stop)
        if status == "stopped" and not reason:
            asked = workflow.status == ChatWorkflow.Status.STOPPING
            reason = "Stopped by the user." if asked else "Interrupted: the server stopped."
        rows = workflow.events.filter(round=workflow.current_round)
        opened = OpenWork()
        announced: set[str] = set()
        began = False
        for row in rows.order_by("seq"):
            envelope = Envelope.from_row(row)
            if (own := engine_event(envelope.event)) is not None:  # the host's own open nothing
                opened.add(own, at=envelope.at)
            if isinstance(envelope.event, DocumentEvent):
                announced.add(envelope.event.document.id)
            began |= isinstance(envelope.event, RoundEvent)
        ending: Ending = "stopped" if status == "stopped" else "failed"
        # A round stopped before it began still has its record, as every other round does.
        unbegun = RoundEvent(
            round=workflow.current_round, status=ending, mode=workflow.mode, reason=reason
        )
        closing = [
            *unannounced_documents(workflow, announced),
            *opened.closing(ending, reason, now=timezone.now()),
            *([] if began else [unbegun]),
            RunEvent(round=workflow.current_round, status=status, reason=reason),
        ]
        stored = recording.record_many(workflow_id, [(event, None) for event in closing])
        ChatWorkflow.objects.filter(pk=workflow_id).update(
            status=status,
            status_reason=reason[:2000],
            updated=timezone.now(),  # the answer is activity: the sidebar sorts by it
        )
    return stored


def cut_off_runs(*, older_than_seconds: int | None = None) -> dict[int, list[Envelope]]:
    """Settle the active runs that will not run again: those DBOS does not hold as pending
    or queued (their workflow failed, was cancelled, or was never started), and those asked
    to stop. Runs DBOS will resume are left alone.

    `older_than_seconds` spares runs whose heartbeat is that recent (another process may be
    starting them this very moment). Returns the stored events of each workflow settled.
    """
    active = ChatWorkflow.objects.filter(status__in=ChatWorkflow.ACTIVE_STATUSES)
    if older_than_seconds is not None:
        cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
        active = active.filter(Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True))
    workflows = list(active)
    states = durable.statuses(durable.RunRef.of(w) for w in workflows)
    settled = {}
    for workflow in workflows:
        state = states.get(durable.RunRef.of(workflow))
        if workflow.status == ChatWorkflow.Status.STOPPING:
            if state in durable.RESUMABLE:
                durable.cancel_now(durable.RunRef.of(workflow))
            settled[workflow.pk] = run_end(workflow.pk, "stopped")
        elif state not in durable.RESUMABLE:
            reason = CUT_OFF_REASONS.get(state or "", CUT_OFF_REASON)
            settled[workflow.pk] = run_end(workflow.pk, "failed", reason)
        elif requeued(workflow, state) and (said := waits_again(workflow)):
            settled[workflow.pk] = [said]
    return settled


def requeued(workflow: ChatWorkflow, state: str | None) -> bool:
    """Whether a run that was running (it beat before) is back on DBOS's queue: its process
    died and a failover put it back, to wait for a live worker."""
    running = workflow.status == ChatWorkflow.Status.RUNNING and workflow.heartbeat is not None
    return running and state in ("ENQUEUED", "DELAYED")


def waits_again(workflow: ChatWorkflow) -> Envelope | None:
    """Say that a run whose process died waits for another, where it was (not "running");
    None when another process said it first (every process watches)."""
    with transaction.atomic():
        marked = ChatWorkflow.objects.filter(
            pk=workflow.pk, status=ChatWorkflow.Status.RUNNING
        ).update(status=ChatWorkflow.Status.QUEUED)
        if not marked:
            return None
        why = "Its process stopped; the run waits for another and resumes where it was."
        event = RunEvent(round=workflow.current_round, status="queued", reason=why)
        return recording.record(workflow.pk, event)
