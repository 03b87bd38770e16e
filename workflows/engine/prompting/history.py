"""The workflow history as Stage 1 sees it: the current round newest first, then older rounds."""

from __future__ import annotations

from collections.abc import Sequence

from workflows.engine.records.protocols import untrusted
from workflows.engine.records.state import HistoryEntry


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


def render_round_line(entries: Sequence[HistoryEntry]) -> str:
    """An earlier round in one line: what was asked, what was answered, what it produced."""
    asked = next((e for e in entries if e.role == "user"), None)
    answer = next((e for e in reversed(entries) if e.role == "assistant"), None)
    labels = list(dict.fromkeys(e.documents_label for e in entries if e.documents_label))
    round_number = entries[0].round
    line = f"- [r{round_number}] asked: {_clip(asked.content, 80) if asked else '-'}"
    if answer:
        line += f" → answered: {_clip(answer.summary or answer.content, 120)}"
    if labels:
        more = f" and {len(labels) - 1} more" if len(labels) > 1 else ""
        line += f" (documents: docList:{labels[-1]}{more})"
    return line


def render_history(
    entries: Sequence[HistoryEntry],
    current_round: int,
    *,
    max_chars: int = 6_000,
    full_rounds: int = 2,
    summarized_rounds: int = 5,
) -> str:
    """The history block of a prompt: this round and the `full_rounds - 1` before it in full,
    newest first; the few rounds before those one line each; older ones counted. Cut at `max_chars`
    (oldest dropped first). A long workflow's history stays the same size."""
    earlier = sorted({e.round for e in entries if e.round != current_round}, reverse=True)
    full = {current_round, *earlier[: full_rounds - 1]}
    summarized = [r for r in earlier if r not in full][:summarized_rounds]
    older = len(earlier) - len(full - {current_round}) - len(summarized)
    lines: list[str] = []
    used = 0
    ordered = reverse_chronological([e for e in entries if e.round in full], current_round)
    for index, entry in enumerate(ordered):
        line = render_entry(entry)
        if used + len(line) > max_chars:
            lines.append(f"- … {len(ordered) - index} older entries omitted")
            break
        lines.append(line)
        used += len(line) + 1
    for number in summarized:
        line = render_round_line([e for e in entries if e.round == number])
        if used + len(line) > max_chars:
            break
        lines.append(line)
        used += len(line) + 1
    if older > 0:
        lines.append(f"- (+{older} earlier round(s), not shown)")
    if not lines:
        return "(none)"
    # Summaries and notes can quote web pages and documents: the model reads them as data.
    return untrusted("workflow history", "\n".join(lines))
