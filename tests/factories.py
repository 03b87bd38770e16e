"""Small builders for test data, written through the same services the app uses."""

from __future__ import annotations

from workflows import services
from workflows.engine.records.events import ActEvent, PlanEvent, RoundEvent
from workflows.engine.records.schemas import ActionSelection
from workflows.execution import recording
from workflows.models import ChatMessage, ChatWorkflow


def workflow_with_history(owner, *, title: str = "Research task") -> ChatWorkflow:
    """A workflow with a user message, an action message with its document, and events."""
    workflow = services.workflow_create(owner=owner, title=title)
    services.message_create(
        workflow=workflow, role=ChatMessage.Role.USER, content="Find X", round=1
    )
    action = services.message_create(
        workflow=workflow,
        role=ChatMessage.Role.ACTION,
        content="Extracted 2 pages.",
        summary="Extracted the quarterly figures from report.pdf",
        round=1,
        task=1,
        action=1,
        action_method="document",
        action_name="extract",
        status="success",
        success=True,
        documents_label="round1_task1_action1_extract",
    )
    services.document_create(
        workflow=workflow,
        name="figures.md",
        data=b"# Figures\n\nRevenue grew 12%.",
        label="round1_task1_action1_extract",
        round=1,
        message=action,
    )
    step = {"round": 1, "task": 1, "action": 1}
    for event in (
        RoundEvent(round=1, status="started", mode="react", model="m"),
        PlanEvent(**step, step=1, selection=ActionSelection(action="document.extract")),
        ActEvent(**step, method="document.extract", parameters={}),
    ):
        recording.record(workflow.pk, event)
    return workflow
