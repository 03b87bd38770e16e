"""How a run ends, every way it can: its open work closed and its final status recorded.

One path for a run that finished, was stopped or crashed (called by the runner) and for a
run cut off by a dead process (found by `settle_runs`): what the round left open — a task,
a step, a question, an answer being streamed — is closed from its stored events, then the
final status is stored as the run's last event. The caller broadcasts what was stored.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from workflows.contract import Envelope, RunEvent
from workflows.engine.closing import OpenWork
from workflows.models import ChatWorkflow

from . import recording

CUT_OFF_REASON = "The run was cut off (the server stopped or crashed); what it did is kept."


def run_end(workflow_id: int, status: str, reason: str = "") -> list[Envelope]:
    """Close what the run's round left open and record its final status; the stored events.

    A stop without a reason was asked for by the user when the workflow says "stopping";
    otherwise the server stopped under it.
    """
    with transaction.atomic():
        workflow = ChatWorkflow.objects.select_for_update().get(pk=workflow_id)
        if status == ChatWorkflow.Status.STOPPED and not reason:
            asked = workflow.status == ChatWorkflow.Status.STOPPING
            reason = "Stopped by the user." if asked else "Interrupted: the server stopped."
        rows = workflow.events.filter(round=workflow.current_round).exclude(type="usage")
        opened = OpenWork(Envelope.from_row(row).event for row in rows.order_by("seq"))
        ending = "stopped" if status == ChatWorkflow.Status.STOPPED else "failed"
        stored = [recording.record(workflow_id, e) for e in opened.closing(ending, reason)]
        final = RunEvent(round=workflow.current_round, status=status, reason=reason)  # type: ignore[arg-type]
        stored.append(recording.record(workflow_id, final))
        ChatWorkflow.objects.filter(pk=workflow_id).update(
            status=status, status_reason=reason[:2000]
        )
    return stored


def cut_off_runs(*, older_than_seconds: int | None = None) -> dict[int, list[Envelope]]:
    """Settle runs a crash or restart cut off: active, with no recent heartbeat.

    With `older_than_seconds=None` every active run is settled (a single-process start,
    where no run can be alive yet). Returns the stored events of each workflow settled.
    """
    active = ChatWorkflow.objects.filter(status__in=ChatWorkflow.ACTIVE_STATUSES)
    if older_than_seconds is not None:
        cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
        active = active.filter(Q(heartbeat__lt=cutoff) | Q(heartbeat__isnull=True))
    settled = {}
    for workflow in active:
        status = (
            ChatWorkflow.Status.STOPPED
            if workflow.status == ChatWorkflow.Status.STOPPING
            else ChatWorkflow.Status.FAILED
        )
        settled[workflow.pk] = run_end(workflow.pk, status, CUT_OFF_REASON)
    return settled
