"""A workflow written out whole, as JSON (for tools) or Markdown (for people)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflows.engine.model.money import Cost
from workflows.engine.model.nature import is_demo
from workflows.engine.records.events import RoundEvent, StepEvent, UsageEvent
from workflows.events.contract import Envelope

from . import pricing
from .models import ChatWorkflow


def workflow_as_json(workflow: ChatWorkflow) -> dict[str, Any]:
    """Everything stored about the workflow, secrets excluded (it holds none)."""
    return {
        "id": workflow.pk,
        "title": str(workflow),
        "mode": workflow.mode,
        "status": workflow.status,
        "statusReason": workflow.status_reason,
        "maxSteps": workflow.max_steps,
        "tokens": {"prompt": workflow.prompt_tokens, "completion": workflow.completion_tokens},
        **spend_as_json(Spend.of(workflow)),
        "created": workflow.created.isoformat(),
        "messages": [
            {
                "id": m.pk,
                "role": m.role,
                "round": m.round,
                "task": m.task,
                "action": m.action,
                "method": m.action_full_name,
                "status": m.status,
                "content": m.content,
                "summary": m.summary,
                "documentsLabel": m.documents_label,
                "success": m.success,
                "learnings": m.learnings,
                "feedback": m.feedback,
                "feedbackComment": m.feedback_comment,
                "created": m.created.isoformat(),
            }
            for m in workflow.messages.all()
        ],
        "documents": [
            {
                "id": d.pk,
                "label": d.label,
                "name": d.name,
                "mime": d.mime_type,
                "size": d.size,
                "sha256": d.sha256,
                "source": d.source,
                "sourceUrl": d.source_url,
            }
            for d in workflow.documents.all()
        ],
        "events": [Envelope.from_row(e).as_json() for e in workflow.events.order_by("seq")],
    }


def workflow_as_markdown(workflow: ChatWorkflow) -> str:
    """A readable transcript: each round's messages, action summaries and documents, with
    what each round and step spent."""
    spend = Spend.of(workflow)
    lines = [
        f"# {as_text(str(workflow))}",
        "",
        f"Mode: {workflow.get_mode_display()} · Status: {workflow.get_status_display()} · "
        f"Tokens: {workflow.prompt_tokens} prompt, {workflow.completion_tokens} completion · "
        f"Cost: {spend.workflow_text()}",
        "",
    ]
    current_round = None
    messages = list(workflow.messages.prefetch_related("documents"))
    asked = {m.round: m.content for m in messages if m.role == m.Role.USER}
    unrecorded = steps_without_message(workflow, messages, spend)
    for message in messages:
        if message.round != current_round or message.role == message.Role.ASSISTANT:
            lines += unrecorded.pop(current_round, [])  # before the answer, or at the round's end
        if message.round != current_round:
            current_round = message.round
            found = spend.rounds.get(message.round)
            ended = f" — {found.status}" if found else ""
            lines += [f"## Round {message.round}{ended}", ""]
            if found:
                lines += [f"_{telemetry(found)}_", ""]
                if found.reason:  # why it ended so: what was not done
                    lines += [f"> {as_text(' '.join(found.reason.split()))}", ""]
        if message.role == message.Role.ACTION:
            marks: dict[bool | None, str] = {True: "✓", False: "✗"}
            outcome = marks.get(message.success, "·")
            lines.append(
                f"### {outcome} Task {message.task}, action {message.action}: "
                f"`{message.action_full_name}`"
            )
            if step := spend.steps.get((message.round, message.task, message.action)):
                lines.append(f"_{telemetry(step)}_")
            if message.summary:
                lines.append(f"_{message.summary}_")
        elif message.role == message.Role.USER and message.reruns:
            edited = asked.get(message.reruns) != message.content
            how = "edited from round {}" if edited else "round {} again"
            lines.append(f"### {message.get_role_display()} ({how.format(message.reruns)})")
        else:
            lines.append(f"### {message.get_role_display()}")
        content = message.content.strip()
        if message.role == message.Role.USER:  # what the user typed is text, not Markdown's HTML
            content = as_text(content)
        lines += ["", content, ""]
        for document in message.documents.all():
            lines.append(
                f"- 📄 {as_text(document.name)} (`{document.label}`, {document.size} bytes)"
            )
        if message.feedback:
            rating = "+1 (helpful)" if message.feedback > 0 else "−1 (not helpful)"
            comment = f": {message.feedback_comment}" if message.feedback_comment else ""
            lines += ["", f"> Feedback {rating}{comment}"]
        lines.append("")
    lines += [line for each in unrecorded.values() for line in each]
    return "\n".join(lines).rstrip() + "\n"


def steps_without_message(
    workflow: ChatWorkflow, messages: list[Any], spend: Spend
) -> dict[int | None, list[str]]:
    """The lines of the closed steps no action message records (a stop or a crash cut them
    off), with what they spent and the documents they wrote, by round."""
    recorded = {(m.round, m.task, m.action) for m in messages if m.role == m.Role.ACTION}
    written: dict[tuple[int, int, int], list[Any]] = {}
    for document in workflow.documents.filter(message=None, key__isnull=False):
        key = document.key or ""  # filtered on: never empty here
        round, task, action, _ = (int(part) for part in key.split(":"))
        written.setdefault((round, task, action), []).append(document)
    lines: dict[int | None, list[str]] = {}
    for (round, task, action), step in sorted(spend.steps.items()):
        if (round, task, action) in recorded:
            continue
        mark = "✓" if step.status == "success" else "✗"
        method = step.method or "no action chosen"
        block = [f"### {mark} Task {task}, action {action}: `{method}` ({step.status})"]
        block.append(f"_{telemetry(step)}_")
        if step.reason:
            block.append(f"_{as_text(step.reason)}_")
        block.append("")
        for document in written.get((round, task, action), []):
            block.append(
                f"- 📄 {as_text(document.name)} (`{document.label}`, {document.size} bytes)"
            )
        lines.setdefault(round, []).extend([*block, ""])
    return lines


def as_text(text: str) -> str:
    """Text a Markdown viewer shows as written: its angle brackets are not HTML."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


@dataclass
class Spend:
    """What a workflow's model calls spent, per call, per step and per round, as stored."""

    calls: list[UsageEvent]
    steps: dict[tuple[int, int, int], StepEvent]
    """Closed steps by (round, task, action)."""
    rounds: dict[int, RoundEvent]
    """Ended rounds by round."""

    @classmethod
    def of(cls, workflow: ChatWorkflow) -> Spend:
        """The workflow's stored usage, step and round events, read through the contract."""
        rows = workflow.events.filter(type__in=("usage", "step", "round")).order_by("seq")
        spend = cls(calls=[], steps={}, rounds={})
        for row in rows:
            match row.envelope.event:
                case UsageEvent() as call:
                    spend.calls.append(call)
                case StepEvent(status=status) as step if status != "started":
                    spend.steps[(step.round, step.task, step.action)] = step
                case RoundEvent(status=status) as ended if status != "started":
                    spend.rounds[ended.round] = ended
        return spend

    def total(self) -> Cost | None:
        """The workflow's cost: the sum of its calls' known costs."""
        return pricing.cost_sum(call.cost for call in self.calls)

    def demo(self) -> bool:
        """Whether only the demo model answered (no real tokens or cost)."""
        return bool(self.calls) and all(is_demo(call.model) for call in self.calls)

    def workflow_text(self) -> str:
        if self.demo():
            return "demo"
        return pricing.cost_parts(self.total())


def telemetry(event: StepEvent | RoundEvent) -> str:
    """A step's or a round's duration, tokens and cost, for people."""
    seconds = pricing.seconds_text(event.durationMs)
    if is_demo(event.model):
        return f"{seconds} · demo"
    tokens = f"{event.tokens:,} tokens ({event.cachedTokens:,} cached)"
    text = f"{seconds} · {tokens} · {pricing.cost_parts(event.cost)}"
    calls = event.calls if isinstance(event, StepEvent) else []
    if len(pricing.models_of(calls)) > 1:  # a step on two models says what each cost
        text += f" · {pricing.calls_text(calls)}"
    return text


def figures(event: StepEvent | RoundEvent) -> dict[str, Any]:
    """A step's or a round's status, tokens, cost, duration and (a step's) calls as JSON."""
    return {
        "status": event.status,
        "tokens": event.tokens,
        "cachedTokens": event.cachedTokens,
        "cost": event.cost.model_dump(mode="json") if event.cost else None,
        "durationMs": event.durationMs,
        "calls": (
            [call.model_dump(mode="json") for call in event.calls]
            if isinstance(event, StepEvent)
            else None
        ),
    }


def spend_as_json(spend: Spend) -> dict[str, Any]:
    """The workflow's cost, and each round's and step's tokens, cost and duration."""
    total = spend.total()
    return {
        "cost": total.model_dump() if total else None,
        "costBasis": "demo" if spend.demo() else ("priced" if total else "unknown"),
        "rounds": [{"round": r, **figures(e)} for r, e in sorted(spend.rounds.items())],
        "steps": [
            {"round": r, "task": t, "action": a, "method": e.method, **figures(e)}
            for (r, t, a), e in sorted(spend.steps.items())
        ],
    }
