"""The admin's steps: the workflow list's Steps column counts exactly the steps the Steps list
shows for that workflow, and the Steps list reads by workflow, round, task and step."""

import re

import pytest
from django.urls import reverse

from tests.factories import workflow_with_history
from workflows import services
from workflows.engine.records.events import StepEvent
from workflows.execution import recording

pytestmark = pytest.mark.django_db


def step(workflow, round: int, task: int, action: int, status: str = "success") -> None:
    """Record a step's event (`status` "started" opens it, any other closes it)."""
    recording.record(
        workflow.pk,
        StepEvent(round=round, task=task, action=action, status=status, step=action,
                  method="calc.add", durationMs=5),
    )  # fmt: skip


def steps_column(admin_client, workflow) -> int:
    """The number in the workflow list's Steps column, on the workflow's row."""
    page = admin_client.get(reverse("admin:workflows_chatworkflow_changelist")).content.decode()
    link = f'href="{reverse("admin:workflows_chatworkflow_change", args=[workflow.pk])}"'
    row = next(row for row in page.split("<tr")[1:] if link in row)
    return int(re.search(r'<td class="field-steps">(\d+)</td>', row).group(1))


def steps_listed(admin_client, workflow) -> int:
    """How many steps the Steps list shows when searched for the workflow's title."""
    url = reverse("admin:workflows_steprecord_changelist")
    response = admin_client.get(url, {"q": workflow.title})
    assert all(s.workflow_id == workflow.pk for s in response.context["cl"].result_list)
    return response.context["cl"].result_count


def test_the_workflow_list_counts_the_steps_the_steps_list_shows(admin_client, alice):
    """A workflow whose only step was stopped (before any action message) counts 1; one
    with an action message, a step rejected, one failed and one still open counts the three
    that ended; a workflow that never ran counts 0. Each as many as the Steps list shows."""
    stopped = services.workflow_create(owner=alice, title="Stopped")
    step(stopped, 1, 1, 1, "started")
    step(stopped, 1, 1, 1, "stopped")
    mixed = workflow_with_history(alice, title="Mixed")  # one action message
    for action, status in ((1, "success"), (2, "rejected"), (3, "failed")):
        step(mixed, 1, 1, action, "started")
        step(mixed, 1, 1, action, status)
    step(mixed, 1, 1, 4, "started")  # open: not a finished step
    idle = services.workflow_create(owner=alice, title="Idle")

    counts = {w.title: (steps_column(admin_client, w), steps_listed(admin_client, w))
              for w in (stopped, mixed, idle)}  # fmt: skip
    assert counts == {"Stopped": (1, 1), "Mixed": (3, 3), "Idle": (0, 0)}


def test_the_steps_list_reads_by_workflow_round_task_and_step(admin_client, alice):
    """Newest workflow first, then round, task and step, whatever order the steps ended in
    and whichever workflow was updated last."""
    first = services.workflow_create(owner=alice, title="First")
    second = services.workflow_create(owner=alice, title="Second")
    for round, task, action in ((2, 1, 1), (1, 2, 1), (1, 1, 2), (1, 1, 1)):
        step(second, round, task, action)
    step(first, 1, 1, 2)
    step(first, 1, 1, 1)
    first.save()  # the last one updated

    response = admin_client.get(reverse("admin:workflows_steprecord_changelist"))
    listed = [(s.workflow.title, s.round, s.task, s.action)
              for s in response.context["cl"].result_list]  # fmt: skip
    assert listed == [
        ("Second", 1, 1, 1),
        ("Second", 1, 1, 2),
        ("Second", 1, 2, 1),
        ("Second", 2, 1, 1),
        ("First", 1, 1, 1),
        ("First", 1, 1, 2),
    ]
