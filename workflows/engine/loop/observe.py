"""Observe: turn an action's result into a compact, size-capped Observation and a summary."""

from __future__ import annotations

import html
import re

from workflows.engine.records.protocols import ActionResult, ProducedDocument, WebFinding
from workflows.engine.records.schemas import Observation, Preview
from workflows.engine.records.state import Caps

_TEXT_MIMES = ("text/", "application/json", "application/xml", "application/x-yaml")


_HIDDEN = re.compile(r"<(head|script|style)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(r"<[^>]*>")


def snippet_of(document: ProducedDocument, limit: int) -> str:
    """The first characters of a text document, whitespace collapsed; a size note otherwise.

    HTML is previewed as its visible text: markup would spend the snippet on nothing.
    """
    if not document.mime.startswith(_TEXT_MIMES):
        return f"({document.mime}, {len(document.data)} bytes)"
    if document.mime.startswith("text/html"):
        markup = document.data[: limit * 40].decode("utf-8", "replace")
        raw = html.unescape(_TAG.sub(" ", _HIDDEN.sub(" ", markup)))
    else:
        raw = document.data[: limit * 4].decode("utf-8", "replace")
    return _clip(" ".join(raw.split()), limit)


def _clip(text: str, limit: int) -> str:
    """The text within `limit` characters, "…" where it was cut: between words, unless the
    last word would take more than a third of it."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace() and (space := cut.rfind(" ")) >= (limit - 1) * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…"


def build_observation(result: ActionResult, result_label: str, caps: Caps) -> Observation:
    """The Observation of one action, within caps.observation_chars as JSON (web results are
    told once: as findings, not again as the snippet of their JSON document)."""
    findings = sorted(result.findings, key=lambda f: f.relevance, reverse=True)[:5]
    observation = Observation(
        success=result.success,
        resultLabel=result_label,
        documentsCount=len(result.documents),
        previews=[
            Preview(
                name=d.name,
                mime=d.mime,
                # the findings already say what a JSON list of results would show
                snippet=""
                if findings and d.mime == "application/json"
                else snippet_of(d, caps.snippet_chars),
            )
            for d in result.documents[:5]
        ],
        notes=[_clip(n, 200) for n in result.notes[:8]],
        findings=[
            WebFinding(
                url=f.url,
                title=_clip(f.title, 120),
                relevance=round(f.relevance, 3),
                keyPoints=[_clip(p, 160) for p in f.keyPoints[:3]],
                entities=f.entities[:6],
            )
            for f in findings
        ],
        error=_clip(result.error, 300) if result.error else None,
        unread=[_clip(reason, 200) for reason in result.unread[:10]],
    )
    return cap_observation(observation, caps.observation_chars)


def cap_observation(observation: Observation, limit: int) -> Observation:
    """Shrink snippets, key points, notes and findings until the JSON fits in `limit`."""
    obs = observation
    snippet = max((len(p.snippet) for p in obs.previews), default=0)
    while len(obs.model_dump_json()) > limit:
        if snippet > 40:
            snippet //= 2
            previews = [
                p.model_copy(update={"snippet": _clip(p.snippet, snippet)}) for p in obs.previews
            ]
            obs = obs.model_copy(update={"previews": previews})
        elif any(f.keyPoints for f in obs.findings):
            findings = [
                f.model_copy(update={"keyPoints": [], "entities": []}) for f in obs.findings
            ]
            obs = obs.model_copy(update={"findings": findings})
        elif len(obs.notes) > 1:
            obs = obs.model_copy(update={"notes": obs.notes[: len(obs.notes) // 2]})
        elif obs.findings:
            obs = obs.model_copy(update={"findings": obs.findings[:-1]})
        elif obs.previews:
            obs = obs.model_copy(update={"previews": obs.previews[:-1]})
        elif len(obs.unread) > 3:  # the last resort: what could not be read is said, counted
            more = f"… and {len(obs.unread) - 3} more input(s) not read"
            obs = obs.model_copy(update={"unread": [*obs.unread[:3], more]})
        else:
            break
    return obs


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def summarize(action: str, observation: Observation) -> str:
    """A short summary for the action's message, derived from the observation (seed 000);
    `action` is "" for a step that ran none (its error says why)."""
    if not observation.success:
        why = observation.error or (observation.notes[0] if observation.notes else "no result")
        return _clip(f"{action} failed: {why}" if action else why, 240)
    parts = [f"{action} produced {observation.documentsCount} document(s)"]
    if observation.documentsCount:
        parts[0] += f" under {observation.resultLabel}"
    if observation.notes:
        parts.append(observation.notes[0])
    elif observation.findings:
        parts.append(
            "top result: " + (observation.findings[0].title or observation.findings[0].url)
        )
    elif observation.previews and observation.previews[0].snippet:
        first = _SENTENCE.split(observation.previews[0].snippet)[0]
        parts.append(f"{observation.previews[0].name}: {first}")
    return _clip(". ".join(parts), 240)


def render_observation_markdown(
    action: str, objective: str, observation: Observation, *, status: str = ""
) -> str:
    """The content of an action message: what was done and what came of it (`status`: how
    the step ended, as its badge says, when it was not run: rejected or stopped)."""
    ended = {"rejected": "rejected by the user", "stopped": "not run"}.get(status, "failed")
    ended = "succeeded" if observation.success else ended
    head = f"**{action}** {ended}" if action else "**No action ran**"
    lines = [head + (f" — {objective}" if objective else "")]
    if observation.error:
        lines.append(f"\nError: {observation.error}")
    if observation.documentsCount:
        lines.append(f"\n{observation.documentsCount} document(s) in `{observation.resultLabel}`:")
        lines.extend(f"- {p.name} ({p.mime}): {p.snippet}" for p in observation.previews)
    if observation.findings:
        lines.append("\nSources:")
        lines.extend(f"- [{f.title or f.url}]({f.url})" for f in observation.findings)
    if observation.notes:
        lines.append("\nNotes:")
        lines.extend(f"- {note}" for note in observation.notes)
    return "\n".join(lines)
