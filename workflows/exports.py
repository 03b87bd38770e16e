"""A workflow written out whole, as JSON (for tools) or Markdown (for people)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workflows.engine.demo.policy import DEMO_LABEL
from workflows.engine.model.money import Cost
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
            ended = f" — {found['status']}" if found else ""
            lines += [f"## Round {message.round}{ended}", ""]
            if found:
                lines += [f"_{telemetry(found)}_", ""]
                if reason := found.get("reason"):  # why it ended so: what was not done
                    lines += [f"> {as_text(' '.join(reason.split()))}", ""]
        if message.role == message.Role.ACTION:
            outcome = {True: "✓", False: "✗"}.get(message.success, "·")
            lines.append(
                f"### {outcome} Task {message.task}, action {message.action}: "
                f"`{message.action_full_name}`"
            )
            if found := spend.steps.get((message.round, message.task, message.action)):
                lines.append(f"_{telemetry(found)}_")
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
        round, task, action, _ = (int(part) for part in document.key.split(":"))
        written.setdefault((round, task, action), []).append(document)
    lines: dict[int | None, list[str]] = {}
    for (round, task, action), payload in sorted(spend.steps.items()):
        if (round, task, action) in recorded:
            continue
        status = payload.get("status", "")
        mark = "✓" if status == "success" else "✗"
        method = payload.get("method") or "no action chosen"
        block = [f"### {mark} Task {task}, action {action}: `{method}` ({status})"]
        block.append(f"_{telemetry(payload)}_")
        if reason := payload.get("reason"):
            block.append(f"_{as_text(reason)}_")
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

    calls: list[dict[str, Any]]
    steps: dict[tuple[int, int, int], dict[str, Any]]
    """Closed steps' payloads by (round, task, action)."""
    rounds: dict[int, dict[str, Any]]
    """Ended rounds' payloads by round."""

    @classmethod
    def of(cls, workflow: ChatWorkflow) -> Spend:
        events = workflow.events.filter(type__in=("usage", "step", "round")).order_by("seq")
        spend = cls(calls=[], steps={}, rounds={})
        for event in events.values_list("type", "round", "task", "action", "payload"):
            kind, round, task, action, payload = event
            if kind == "usage":
                spend.calls.append(payload)
            elif kind == "step" and payload.get("status") != "started":
                spend.steps[(round, task, action)] = payload
            elif kind == "round" and payload.get("status") != "started":
                spend.rounds[round] = payload
        return spend

    def total(self) -> Cost | None:
        """The workflow's cost: the sum of its calls' known costs."""
        return pricing.cost_sum(pricing.cost_from(call.get("cost")) for call in self.calls)

    def demo(self) -> bool:
        """Whether only the demo model answered (no real tokens or cost)."""
        return bool(self.calls) and all(call.get("model") == DEMO_LABEL for call in self.calls)

    def workflow_text(self) -> str:
        if self.demo():
            return "demo"
        return pricing.cost_parts(self.total())


def telemetry(payload: dict[str, Any]) -> str:
    """A step's or a round's duration, tokens and cost, for people."""
    seconds = f"{payload.get('durationMs', 0) / 1000:.1f} s"
    if payload.get("model") == DEMO_LABEL:
        return f"{seconds} · demo"
    tokens = f"{payload.get('tokens', 0):,} tokens ({payload.get('cachedTokens', 0):,} cached)"
    text = f"{seconds} · {tokens} · {pricing.cost_parts(pricing.cost_from(payload.get('cost')))}"
    calls = payload.get("calls") or []
    if len(pricing.models_of(calls)) > 1:  # a step on two models says what each cost
        text += f" · {pricing.calls_text(calls)}"
    return text


def spend_as_json(spend: Spend) -> dict[str, Any]:
    """The workflow's cost, and each round's and step's tokens, cost and duration."""

    def figures(payload: dict[str, Any]) -> dict[str, Any]:
        keys = ("status", "tokens", "cachedTokens", "cost", "durationMs", "calls")
        return {key: payload.get(key) for key in keys}

    total = spend.total()
    return {
        "cost": total.model_dump() if total else None,
        "costBasis": "demo" if spend.demo() else ("priced" if total else "unknown"),
        "rounds": [{"round": r, **figures(p)} for r, p in sorted(spend.rounds.items())],
        "steps": [
            {"round": r, "task": t, "action": a, "method": p.get("method", ""), **figures(p)}
            for (r, t, a), p in sorted(spend.steps.items())
        ],
    }
