"""Channel-layer plumbing: group names and broadcasting stored events to a workflow's viewers."""

from __future__ import annotations

from typing import Any

from channels.layers import get_channel_layer

from .models import WorkflowEvent


def viewers_group(workflow_id: int) -> str:
    """Every socket watching one workflow."""
    return f"workflow.{workflow_id}"


def control_group(workflow_id: int) -> str:
    """The run of one workflow, wherever it executes: stop, steer, extend, approve."""
    return f"workflow-control.{workflow_id}"


def event_as_json(event: WorkflowEvent) -> dict[str, Any]:
    """The public JSON shape of a stored event (the streaming contract)."""
    return {
        "workflow": event.workflow_id,
        "seq": event.seq,
        "type": event.type,
        "round": event.round,
        "task": event.task,
        "action": event.action,
        "payload": event.payload,
        "at": event.created.isoformat(),
    }


async def broadcast(workflow_id: int, event: dict[str, Any]) -> None:
    """Send an event to the workflow's viewers. Call only after it is committed."""
    layer = get_channel_layer()
    await layer.group_send(viewers_group(workflow_id), {"type": "workflow.event", "event": event})


async def send_control(workflow_id: int, command: dict[str, Any]) -> None:
    """Send a command to the workflow's run, in whichever process it runs."""
    layer = get_channel_layer()
    await layer.group_send(control_group(workflow_id), {"type": "run.control", **command})
