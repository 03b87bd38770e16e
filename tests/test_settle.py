"""Runs cut off by a crash or restart are found and settled with a final status."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from workflows import services
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db


def active(owner, status, heartbeat_age=None):
    workflow = services.workflow_create(owner=owner)
    workflow.status = status
    workflow.current_round = 1
    if heartbeat_age is not None:
        workflow.heartbeat = timezone.now() - timedelta(seconds=heartbeat_age)
    workflow.save()
    return workflow


def test_restart_settles_every_cut_off_run(alice):
    """On a single-process start, running becomes failed and stopping becomes stopped."""
    running = active(alice, ChatWorkflow.Status.RUNNING)
    stopping = active(alice, ChatWorkflow.Status.STOPPING)
    idle = services.workflow_create(owner=alice)
    out = StringIO()
    call_command("settle_runs", stdout=out)
    for workflow in (running, stopping, idle):
        workflow.refresh_from_db()
    assert running.status == ChatWorkflow.Status.FAILED
    assert stopping.status == ChatWorkflow.Status.STOPPED
    assert idle.status == ChatWorkflow.Status.IDLE
    assert "cut off" in running.status_reason
    final = running.events.get()
    assert (final.type, final.payload["final"], final.round) == ("status", True, 1)
    assert "Settled 2" in out.getvalue()


def test_stale_after_spares_runs_with_a_recent_heartbeat(alice):
    """With several processes only runs whose heartbeat went quiet are settled."""
    alive = active(alice, ChatWorkflow.Status.RUNNING, heartbeat_age=5)
    dead = active(alice, ChatWorkflow.Status.RUNNING, heartbeat_age=600)
    call_command("settle_runs", "--stale-after", "60", stdout=StringIO())
    alive.refresh_from_db()
    dead.refresh_from_db()
    assert alive.status == ChatWorkflow.Status.RUNNING
    assert dead.status == ChatWorkflow.Status.FAILED
