"""A workflow written out whole, as JSON (for tools) or Markdown (for people)."""

from __future__ import annotations

from typing import Any

from .contract import Envelope
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
    """A readable transcript: each round's messages, action summaries and documents."""
    lines = [
        f"# {workflow}",
        "",
        f"Mode: {workflow.get_mode_display()} · Status: {workflow.get_status_display()} · "
        f"Tokens: {workflow.prompt_tokens} prompt, {workflow.completion_tokens} completion",
        "",
    ]
    current_round = None
    for message in workflow.messages.prefetch_related("documents"):
        if message.round != current_round:
            current_round = message.round
            lines += [f"## Round {message.round}", ""]
        if message.role == message.Role.ACTION:
            outcome = {True: "✓", False: "✗"}.get(message.success, "·")
            lines.append(
                f"### {outcome} Task {message.task}, action {message.action}: "
                f"`{message.action_full_name}`"
            )
            if message.summary:
                lines.append(f"_{message.summary}_")
        else:
            lines.append(f"### {message.get_role_display()}")
        lines += ["", message.content.strip(), ""]
        for document in message.documents.all():
            lines.append(f"- 📄 {document.name} (`{document.label}`, {document.size} bytes)")
        if message.feedback:
            rating = "+1 (helpful)" if message.feedback > 0 else "−1 (not helpful)"
            comment = f": {message.feedback_comment}" if message.feedback_comment else ""
            lines += ["", f"> Feedback {rating}{comment}"]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
