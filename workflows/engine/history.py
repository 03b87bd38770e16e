"""The workflow history as Stage 1 sees it: the current round newest first, then older rounds."""

from __future__ import annotations

from collections.abc import Sequence

from .contracts import untrusted
from .state import HistoryEntry


def reverse_chronological(
    entries: Sequence[HistoryEntry], current_round: int
) -> list[HistoryEntry]:
    """Current round newest to oldest, then earlier rounds, each newest to oldest.

    `entries` are oldest first; within a round their order is the order they happened.
    """
    rounds = sorted({e.round for e in entries}, key=lambda r: (r != current_round, -r))
    ordered: list[HistoryEntry] = []
    for number in rounds:
        ordered.extend(reversed([e for e in entries if e.round == number]))
    return ordered


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_entry(entry: HistoryEntry, *, snippet_chars: int = 240) -> str:
    """One history line with its documents, findings, summary and learnings."""
    where = f"r{entry.round}"
    if entry.task:
        where += f" t{entry.task}"
    if entry.action:
        where += f" a{entry.action}"
    head = f"- [{where}] {entry.role}"
    if entry.method:
        head += f" {entry.method}"
    if entry.success is not None:
        head += " (success)" if entry.success else " (failed)"
    parts = [head]
    if entry.summary:
        parts.append(f"summary: {_clip(entry.summary, snippet_chars)}")
    elif entry.content:
        parts.append(f"content: {_clip(entry.content, snippet_chars)}")
    if entry.documents_label or entry.documents:
        refs = ", ".join(entry.documents[:6])
        label = entry.documents_label or "-"
        parts.append(f"documents: {label}" + (f" [{refs}]" if refs else ""))
    if entry.notes:
        parts.append("notes: " + "; ".join(_clip(n, 120) for n in entry.notes[:4]))
    if entry.learnings:
        parts.append("learnings: " + "; ".join(_clip(n, 120) for n in entry.learnings[:4]))
    return "\n  ".join(parts)


def render_history(
    entries: Sequence[HistoryEntry], current_round: int, *, max_chars: int = 6_000
) -> str:
    """The history block of the Stage 1 prompt, cut at `max_chars` (oldest dropped first)."""
    lines: list[str] = []
    used = 0
    ordered = reverse_chronological(entries, current_round)
    for index, entry in enumerate(ordered):
        line = render_entry(entry)
        if used + len(line) > max_chars:
            lines.append(f"- … {len(ordered) - index} older entries omitted")
            break
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return "(none)"
    # Summaries and notes can quote web pages and documents: the model reads them as data.
    return untrusted("workflow history", "\n".join(lines))
