"""run_task while its round runs: every step's plan, act, observe and refine as a progress
line, the step-limit question and approvals asked through elicitation (or answered with the
documented default: no more steps, reject), a cancelled call stopping the round, and the
answer with the round's documents once it ends."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Literal

import anyio
import mcp_types as types
from channels.db import database_sync_to_async
from mcp.server import ServerRequestContext

from workflows.api.compat.answer import RoundReading
from workflows.engine.records.events import (
    ActEvent,
    ApprovalEvent,
    AskEvent,
    ObserveEvent,
    PlanEvent,
    RefineEvent,
    ReviewEvent,
    TaskEvent,
    TaskPlanEvent,
    ThoughtEvent,
)
from workflows.execution import launcher
from workflows.live.feed import Feed
from workflows.models import ChatDocument

from .resources import document_contents, document_uri, is_text
from .schemas import RunTaskOut
from .tools import Opened, document_out

logger = logging.getLogger(__name__)

LINE_CHARS = 200
EMBED_TEXT_BYTES = 100_000
"""A produced text document up to this size comes embedded in the result; anything else as
a link to read with resources/read."""
STEPS_MOST = 50
GONE = "The workflow was deleted while the round ran."
ENDS: dict[str, Literal["completed", "stopped"]] = {"completed": "completed", "stopped": "stopped"}
"""How a round ended, as run_task says it (any other end is "failed")."""
PROGRESS_TYPES = {"taskplan", "task", "plan", "act", "observe", "refine", "review", "thought",
                  "ask", "approval"}  # fmt: skip


def shorten(text: str, most: int = LINE_CHARS) -> str:
    """One line of at most `most` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= most else line[: most - 1] + "…"


class StepLines:
    """Each step's phases as the one line a progress notification carries."""

    def __init__(self) -> None:
        self.steps: dict[int, int] = {}

    def where(self, task: int) -> str:
        step = self.steps.get(task)
        return f"Task {task}, step {step}" if step else f"Task {task}"

    def line(self, event: Any) -> str | None:
        """The line of an event of the round (None: it makes none)."""
        match event:
            case TaskPlanEvent():
                count = len(event.tasks)
                return shorten(f"Planned {count} task{'s' if count != 1 else ''}: {event.overview}")
            case TaskEvent(status="running"):
                return shorten(f"Task {event.task}: {event.objective}")
            case TaskEvent() if event.status in ("success", "failed", "incomplete", "stopped"):
                return shorten(f"Task {event.task} {event.status}. {event.reason}".strip())
            case PlanEvent():
                self.steps[event.task] = event.step
                chosen = event.selection
                return shorten(f"{self.where(event.task)} · plan: {chosen.action} — "
                               f"{chosen.actionObjective}")  # fmt: skip
            case ActEvent():
                shown = ", ".join(f"{k}={v!r}" for k, v in event.parameters.items())
                return shorten(f"{self.where(event.task)} · act: {event.method}({shown})")
            case ObserveEvent():
                seen = event.observation
                said = (
                    seen.error or "; ".join(seen.notes) or ", ".join(p.name for p in seen.previews)
                )
                outcome = "success" if seen.success else "failed"
                return shorten(f"{self.where(event.task)} · observe: {outcome}, "
                               f"{seen.documentsCount} document(s). {said}".strip())  # fmt: skip
            case RefineEvent():
                return shorten(
                    f"{self.where(event.task)} · refine: {event.decision} — {event.reason}"
                )
            case ReviewEvent():
                return shorten(f"Task {event.task} review: {event.status}. {event.reason}".strip())
            case ThoughtEvent():
                return shorten(f"Thought {event.number}: {event.thinking}")
            case AskEvent(status="waiting"):
                return shorten(f"Waiting for an answer: {event.question}")
            case ApprovalEvent(status="waiting"):
                return shorten(f"Waiting for approval of {event.method}")
        return None


def can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client takes elicitation requests on this call."""
    capabilities = ctx.session.client_capabilities
    return bool(
        capabilities and capabilities.elicitation is not None and ctx.session.can_send_request
    )


def question_of(event: AskEvent | ApprovalEvent) -> tuple[str, str, dict[str, Any], Any]:
    """A waiting question as (kind, message, requested schema, default answer)."""
    if isinstance(event, AskEvent):
        schema = {
            "type": "object",
            "properties": {
                "steps": {
                    "type": "integer",
                    "title": "More steps",
                    "description": "How many more steps the task may take; 0 stops it here, "
                    "keeping its work.",
                    "minimum": 0,
                    "maximum": STEPS_MOST,
                }
            },
            "required": ["steps"],
        }
        return "extend", f"PowerOn: {event.question}", schema, 0
    shown = ", ".join(f"{k}={v!r}" for k, v in event.parameters.items())
    schema = {
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "title": "Approve",
                "description": "true runs the action; false rejects it.",
            }
        },
        "required": ["approve"],
    }
    return "approve", shorten(f"PowerOn asks to run {event.method}({shown}).", 1000), schema, False


async def answer_question(
    ctx: ServerRequestContext[Any, Any], workflow_id: int, event: AskEvent | ApprovalEvent
) -> None:
    """Ask the client (elicitation), else take the default; answer the run either way. A
    question answered meanwhile (on the page) cancels this."""
    kind, message, schema, value = question_of(event)
    if can_elicit(ctx):
        try:
            said = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as error:  # the client failed to ask: the default answers
            logger.info("elicitation failed, answering the default: %s", error)
        else:
            content = said.content or {}
            steps = content.get("steps")
            if said.action == "accept" and kind == "extend" and isinstance(steps, int | float):
                value = min(STEPS_MOST, max(0, int(steps)))
            elif said.action == "accept":
                value = content.get("approve") is True
    with contextlib.suppress(launcher.CommandRefused):  # answered or ended meanwhile
        await launcher.answer(workflow_id=workflow_id, kind=kind, value=value)


async def report(ctx: ServerRequestContext[Any, Any], count: int, line: str) -> None:
    try:
        await ctx.session.report_progress(count, None, line)
    except Exception as error:  # a client gone away does not stop following the round
        logger.debug("a progress notification was not sent: %s", error)


async def follow(ctx: ServerRequestContext[Any, Any], opened: Opened, page: str) -> RoundReading:
    """Follow the round to its end, telling the client each step; stop it when the call is
    cancelled."""
    workflow_id = opened.workflow.pk
    reading = RoundReading(round=opened.round, page=page)
    lines = StepLines()
    asking: dict[tuple[str, int, int], asyncio.Task[None]] = {}
    sent = 0
    try:
        async with Feed(workflow_id, after=opened.after) as feed:
            async for frame in feed:
                reading.take(frame)
                if reading.ended:
                    break
                if frame.type not in PROGRESS_TYPES:
                    continue
                event = frame.envelope.event
                if event.round != opened.round:
                    continue
                if isinstance(event, AskEvent | ApprovalEvent):
                    key = (event.type, event.task, event.action)
                    if event.status == "waiting" and key not in asking:
                        asking[key] = asyncio.create_task(answer_question(ctx, workflow_id, event))
                    elif event.status != "waiting" and (task := asking.pop(key, None)):
                        task.cancel()
                if line := lines.line(event):
                    sent += 1
                    await report(ctx, sent, line)
    except BaseException:
        if not reading.ended:  # the call was cancelled: so is the round, for good
            with anyio.CancelScope(shield=True):
                await stop(workflow_id)
        raise
    finally:
        for task in asking.values():
            task.cancel()
    if not reading.ended:  # the feed ended first
        reading.status, reading.reason = "failed", GONE
    return reading


async def stop(workflow_id: int) -> None:
    with contextlib.suppress(launcher.CommandRefused):  # it ended meanwhile
        await launcher.request_stop(workflow_id=workflow_id)


@database_sync_to_async
def produced(workflow_id: int, round: int) -> list[tuple[ChatDocument, Any]]:
    """The documents the round produced, each with its contents when it is embedded."""
    documents = ChatDocument.objects.filter(
        workflow_id=workflow_id, round=round, source=ChatDocument.Source.PRODUCED
    ).order_by("created", "id")
    return [
        (d, document_contents(d) if is_text(d.mime_type) and d.size <= EMBED_TEXT_BYTES else None)
        for d in documents
    ]


async def result(reading: RoundReading, opened: Opened, page: str) -> types.CallToolResult:
    """The round's answer, its documents (embedded when small text, else as links) and the
    structured result."""
    documents = await produced(opened.workflow.pk, opened.round)
    answer = reading.content()
    out = RunTaskOut(
        workflow=opened.workflow.pk,
        round=opened.round,
        status=ENDS.get(reading.status, "failed"),
        reason=reading.reason,
        answer=answer,
        documents=[document_out(d) for d, _ in documents],
        page=page,
    )
    where = f"(PowerOn workflow {out.workflow}, round {out.round}: {out.status}. {page})"
    content: list[Any] = [types.TextContent(text=f"{answer}\n\n{where}".strip())]
    for document, contents in documents:
        if contents is not None and isinstance(contents, types.TextResourceContents):
            content.append(types.EmbeddedResource(resource=contents))
        else:
            content.append(
                types.ResourceLink(
                    uri=document_uri(document),
                    name=document.name,
                    mime_type=document.mime_type,
                    size=document.size,
                )
            )
    return types.CallToolResult(
        content=content,
        structured_content=out.model_dump(mode="json"),
        is_error=out.status != "completed",
    )
