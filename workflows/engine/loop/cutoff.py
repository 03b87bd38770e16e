"""A round its time budget cut during a model call (`deadline`): what it opened is closed, the
task that was running is incomplete, and the answer says what stopped and what was done,
keeping any part of it already written."""

from __future__ import annotations

from workflows.engine.loop.answer import answer_key, outcome_list, produced_documents
from workflows.engine.loop.closing import OpenWork
from workflows.engine.loop.core import RoundContext
from workflows.engine.records.events import Event, MessageEvent, StepEvent, TaskEvent


def budget_closing(ctx: RoundContext, opened: OpenWork, reason: str) -> list[Event]:
    """The events that end a round cut off by its time budget, and its outcome in `ctx`."""
    numbers = [n for n, task in opened.tasks.items() if task.status in ("running", "retry")]
    running = [task for task in ctx.tasks if task.number in numbers]
    for task in running:
        task.stop_code, task.stop_reason, task.status = "time_budget", reason, "incomplete"
    number = running[0].number if running else 0
    events: list[Event] = [ctx.status("time_budget", reason, task=number)]
    key = answer_key(ctx)
    answered = False
    for event in opened.closing("failed", reason):
        if isinstance(event, StepEvent):  # cut, not failed: the step's work is kept as is
            event = event.model_copy(update={"status": "stopped"})
        elif isinstance(event, TaskEvent) and event.status == "failed":
            event = event.model_copy(update={"status": "incomplete"})
        elif isinstance(event, MessageEvent) and event.key == key:
            answered = True  # a partial answer keeps what was written, and says why it ends
            cut = f"{event.content.rstrip()}\n\nI stopped here: {reason}"
            event = event.model_copy(
                update={"content": cut.lstrip(), "documents": produced_documents(ctx)}
            )
        events.append(event)
    if not answered:
        events.append(budget_message(ctx, reason))
    ctx.outcome = ("failed", reason)
    return events


def budget_message(ctx: RoundContext, reason: str) -> MessageEvent:
    """The answer of a round cut off before its answer was written: what stopped it and,
    when tasks ran, what each did."""
    text = f"I stopped early: {reason}"
    if ctx.tasks:
        text += f"\n\n{outcome_list(ctx)}"
    return MessageEvent(
        round=ctx.round,
        key=answer_key(ctx),
        role="assistant",
        content=text,
        summary=f"I stopped early: {reason}",
        documents=produced_documents(ctx),
        success=False,
        status="failed",
    )
