"""A question the round waits on, as an AG-UI interrupt, and the answer a resuming run brings.

An interrupt's id names the workflow and the seq of the event that asked
(`poweron-<workflow>-<seq>`), so the `resume` of the next RunAgentInput finds the question
whatever thread it comes on. Its `responseSchema` is the answer the API's run operations
take: `{"approved": bool}` for an approval, `{"steps": n}` for the step-limit question (0
stops the task). A resume entry `cancelled` rejects the action, or stops the task.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ag_ui.core import Interrupt, ResumeEntry
from pydantic import ValidationError

from workflows.api.errors import field_errors, invalid
from workflows.api.schemas import ApproveIn, ExtendIn
from workflows.engine.records.events import ApprovalEvent, AskEvent

ID = re.compile(r"poweron-(?P<workflow>\d{1,18})-(?P<seq>\d{1,18})")


def interrupt_id(workflow: int, seq: int) -> str:
    return f"poweron-{workflow}-{seq}"


def approval_interrupt(
    workflow: int, seq: int, event: ApprovalEvent, tool_call: str | None
) -> Interrupt:
    """An action waiting for approval: it concerns the action's tool call."""
    documents = ", ".join(d.name for d in event.documents)
    reads = f" It reads {documents}." if documents else ""
    parameters = json.dumps(event.parameters, ensure_ascii=False)
    return Interrupt(
        id=interrupt_id(workflow, seq),
        reason="approval",
        message=f"Approve {event.method} with {parameters}?{reads}",
        tool_call_id=tool_call,
        response_schema=ApproveIn.model_json_schema(),
        metadata={
            "poweron": {
                "method": event.method,
                "parameters": event.parameters,
                "documents": [d.model_dump(mode="json") for d in event.documents],
                "connection": event.connection,
            }
        },
    )


def ask_interrupt(workflow: int, seq: int, event: AskEvent) -> Interrupt:
    """The step-limit question: how many more steps the task may take."""
    return Interrupt(
        id=interrupt_id(workflow, seq),
        reason="step_limit",
        message=event.question,
        response_schema=ExtendIn.model_json_schema(),
        metadata={"poweron": {"task": event.task, "stepsDone": event.stepsDone}},
    )


@dataclass(frozen=True)
class Answer:
    """A resume entry, read: the question it answers and the launcher's answer to it."""

    workflow: int
    seq: int
    kind: str
    """"approve" or "extend"."""
    value: Any


def parse_id(value: str, where: str) -> tuple[int, int]:
    """The workflow and seq an interrupt id names (422 for any other id)."""
    found = ID.fullmatch(value)
    if found is None:
        raise invalid(where, f"{value!r} is not an interrupt of PowerOn's.")
    return int(found["workflow"]), int(found["seq"])


def read_answer(entry: ResumeEntry, index: int, kind: str) -> Answer:
    """The answer one resume entry gives to a question of `kind` (the event's type at its
    seq: "approval" or "ask")."""
    where = f"resume.{index}"
    workflow, seq = parse_id(entry.interrupt_id, f"{where}.interruptId")
    approval = kind == "approval"
    launcher_kind = "approve" if approval else "extend"
    if entry.status == "cancelled":
        return Answer(workflow, seq, launcher_kind, False if approval else 0)
    payload = entry.payload
    if isinstance(payload, bool | int):  # the bare answer, without its object
        payload = {"approved": payload} if approval else {"steps": payload}
    try:
        if approval:
            return Answer(workflow, seq, launcher_kind, ApproveIn.model_validate(payload).approved)
        return Answer(workflow, seq, launcher_kind, ExtendIn.model_validate(payload).steps)
    except ValidationError as error:
        found = field_errors([dict(e) for e in error.errors()])
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in found)
        raise invalid(f"{where}.payload", detail) from None
