"""The round's final answer, written from facts.

The host knows what happened: which tasks failed, which documents exist. A round where
nothing succeeded is answered by the engine itself, without a model call; otherwise the
model writes the answer from the real outcome and results, after a plain line that says
what failed, and any file it names that does not exist is pointed out below it. The
produced documents travel with the answer message, so the page links the real ones.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from workflows.engine.loop.asked import calculation_note, requested_unavailable
from workflows.engine.loop.checks import arithmetic_note, sources_note
from workflows.engine.loop.core import BUDGET_CODES, RoundContext
from workflows.engine.loop.deadline import stream_within
from workflows.engine.model.facts import answer_facts
from workflows.engine.model.request import Request
from workflows.engine.prompting.history import render_history
from workflows.engine.prompting.prompts import build, render_list
from workflows.engine.prompting.selection import unavailable_actions
from workflows.engine.records.events import DeltaEvent, Event, MessageEvent
from workflows.engine.records.protocols import HOST_NOTE, DocumentRef, Message, Usage, untrusted

_EXTENSION = r"\.(?:pdf|md|markdown|html?|docx?|csv|json|txt|xlsx?|pptx?)"
_FILE_NAME = re.compile(
    rf"[“\"'`]([^“”\"'`\n]{{1,80}}{_EXTENSION})[”\"'`]|\b([\w.-]{{1,80}}{_EXTENSION})\b",
    re.IGNORECASE,
)
"""A file name: quoted (it may hold spaces) or a single word with a document extension."""
OWN_KNOWLEDGE = "_Answered without an action: from the conversation and the model's own knowledge._"
"""The host's mark under an answer written without any action."""
_ATTACHED = re.compile(r"\b(attached|enclosed|saved (?:as|to)|see the (?:report|file))\b", re.I)
_QUOTED = r"(?<!\w)[“\"'‘`]([^“”\"'‘’`\n]{2,80}?)[”\"'’`](?!\w)"
_DOCUMENT = r"(?:report|file|document|spreadsheet|presentation|pdf|attachment)s?"
_NAMED_DOCUMENT = re.compile(
    rf"\b{_DOCUMENT}\b(?:\s+(?:is\s+|was\s+)?(?:named|called|titled|entitled))?[\s:,]*{_QUOTED}"
    rf"|\b(?:saved|exported|attached|stored|written|filed)\s+(?:it\s+|them\s+)?as\s+{_QUOTED}"
    rf"|{_QUOTED}\s+{_DOCUMENT}\b",
    re.IGNORECASE,
)
"""A quoted name given as a document's, without an extension: "the report 'Q3 Summary'",
"a file called “Notes”", "saved as 'Draft'", "the 'Draft' document"."""
_PRODUCED = re.compile(
    r"\b(attached|enclosed|produced|saved|created|generated|exported|written|prepared|"
    r"stored|ready|available)\b",
    re.IGNORECASE,
)
"""Words that claim a document exists: a quoted name counts as a claim only beside one."""


def answer_key(ctx: RoundContext) -> str:
    """The key of the round's answer message (its deltas carry it too)."""
    return f"round{ctx.round}_answer"


def produced_documents(ctx: RoundContext) -> list[DocumentRef]:
    """The documents this round produced or fetched (not the user's uploads)."""
    return [ref for ref in ctx.store.index() if ref.round == ctx.round and ref.source != "uploaded"]


def outcome_list(ctx: RoundContext) -> str:
    """What each task did, for people: a Markdown list, each task's steps under it."""
    if not ctx.tasks:
        return "No actions were needed."
    lines = []
    for task in ctx.tasks:
        why = task.failure or task.stop_reason
        lines.append(
            f"- Task {task.number} ({task.status}): {task.item.objective}"
            + (f" — {why}" if why else "")
        )
        lines += [f"  - {step.told()}" for step in task.steps]
    return "\n".join(lines)


def outcome_text(ctx: RoundContext) -> str:
    """What each task did, one block per task, failed steps included."""
    if not ctx.tasks:
        return "No actions were needed."
    blocks = []
    for task in ctx.tasks:
        head = f"Task {task.number} ({task.status}): {task.item.objective}"
        if why := task.failure or task.stop_reason:
            head += f" — stopped: {why}"
        blocks.append("\n".join([head, *(f"  {step.told()}" for step in task.steps)]))
    return "\n".join(blocks)


def results_text(ctx: RoundContext) -> str:
    """Document previews and web findings of every step, fenced and capped."""
    parts: list[str] = []
    for task in ctx.tasks:
        for step in task.steps:
            obs = step.observation
            lines = [f"{p.name}: {p.snippet}" for p in obs.previews]
            lines += [
                f"{f.title or f.url} ({f.url}): {' '.join(f.keyPoints)}" for f in obs.findings
            ]
            if lines:
                parts.append(untrusted(obs.resultLabel, "\n".join(lines)))
    text = "\n".join(parts) or "(no results)"
    limit = ctx.state.caps.final_context_chars
    return text if len(text) <= limit else text[: limit - 1] + "…"


def documents_text(documents: list[DocumentRef]) -> str:
    """The produced documents for the answer prompt, or a plain statement that there are none."""
    if not documents:
        return "(none: no document was produced, so do not say that anything is attached)"
    return "\n".join(f"- {ref.name} ({ref.mime})" for ref in documents)


def failures_line(ctx: RoundContext) -> str:
    """What was not done, in plain words ("" when every task succeeded): the tasks cut short
    with work left first, then those that failed."""
    unfinished = [t for t in ctx.tasks if t.status == "incomplete"]
    failed = [t for t in ctx.tasks if t.status not in ("success", "incomplete")]
    lines = []
    if unfinished:
        parts = [f"task {t.number} ({t.item.objective[:80]}) — {t.failure}" for t in unfinished]
        lines.append("**Not finished:** " + "; ".join(parts) + "\n\n")
    if failed:
        parts = [
            f"task {t.number} ({t.item.objective[:80]}) {t.status}"
            + (f" — {why}" if (why := t.failure or t.stop_reason) else "")
            for t in failed
        ]
        lines.append("**Not everything worked:** " + "; ".join(parts) + "\n\n")
    return "".join(lines)


def unread_line(ctx: RoundContext) -> str:
    """The inputs that actions which succeeded could not use, with why ("" when none): a
    partial success is said, not left in a folded step's notes."""
    unread = {
        reason: None
        for task in ctx.tasks
        for step in task.steps
        if step.observation.success
        for reason in step.observation.unread
    }
    return "**Not read:** " + "; ".join(unread) + "\n\n" if unread else ""


def missing_line(ctx: RoundContext) -> str:
    """The actions the model wanted, or the request names or needs (web search for current
    facts), that are not available here, with why ("" when none): said first, whether the
    task plan chose actions or a direct answer. A web action the model wanted is not named
    when the user attached the sources to this message and the task succeeded from them: it
    was not needed (a small model reaches for web.crawl to read an attached file)."""
    attached = any(ref.source == "uploaded" and ref.round == ctx.round for ref in ctx.store.index())
    missing = {
        name: why
        for task in ctx.tasks
        for name, why in task.missing.items()
        if not (attached and task.status == "success" and name.startswith("web."))
    }
    for name, why in requested_unavailable(ctx.state.prompt, unavailable_actions(ctx)).items():
        missing.setdefault(name, why)
    if not missing:
        return ""
    parts = [f"{name} — {' '.join(why.split())}" for name, why in missing.items()]
    return "**Not available here:** " + "; ".join(parts) + "\n\n"


def claimed_names(text: str) -> set[str]:
    """The quoted names, without an extension, that a sentence claims a document has (a
    quoted phrase beside "report", "file" or "saved as", in a sentence that says it was
    attached, produced, saved or created)."""
    names = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if _PRODUCED.search(sentence):
            for match in _NAMED_DOCUMENT.finditer(sentence):
                names.add(next(group for group in match.groups() if group).strip())
    return {name for name in names if name and not _FILE_NAME.fullmatch(f'"{name}"')}


def words_of(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def names_a_document(name: str, refs: list[DocumentRef]) -> bool:
    """Whether a name without an extension is one of the documents' (a report's title is its
    file name's stem: "Baltic Solar Briefing" is baltic_solar_briefing.md), or part of one's."""
    claimed = f" {words_of(name)} "
    for ref in refs:
        for known in (ref.name, ref.name.rsplit(".", 1)[0], ref.label):
            words = f" {words_of(known)} "
            if words.strip() and (claimed in words or words in claimed):
                return True
    return False


def unsupported_claims(text: str, ctx: RoundContext, produced: list[DocumentRef]) -> str:
    """A note on files the answer names that do not exist ("" when it names only real ones):
    file names with an extension, and quoted names it gives a document (see claimed_names)."""
    index = ctx.store.index()
    known = {ref.name.lower() for ref in index}
    named = {quoted or bare for quoted, bare in _FILE_NAME.findall(text)}
    invented = [name for name in named if name.lower() not in known]
    lowered = {name.lower() for name in named}
    invented += [
        name
        for name in claimed_names(text)
        if name.lower() not in lowered and not names_a_document(name, index)
    ]
    invented = sorted(set(invented), key=str.lower)
    notes = [f"no document named “{name}” exists in this workflow" for name in invented]
    if not produced and _ATTACHED.search(text):
        notes.append("this round produced no document, so nothing is attached")
    return "\n\n> Note from PowerOn: " + "; ".join(notes) + "." if notes else ""


async def final_answer(ctx: RoundContext) -> AsyncIterator[Event]:
    """Stream the final answer, then emit it whole as a message with its documents."""
    key = answer_key(ctx)
    documents = produced_documents(ctx)
    succeeded = any(step.observation.success for task in ctx.tasks for step in task.steps)
    if ctx.tasks and not succeeded:
        text = failed_answer(ctx, documents)
        yield DeltaEvent(round=ctx.round, key=key, text=text, offset=0)
    elif exhausted := ctx.budget.exhausted():  # no call left to write it: the facts, said
        text = budget_answer(ctx, exhausted[1])
        yield DeltaEvent(round=ctx.round, key=key, text=text, offset=0)
    else:
        text = head = failures_line(ctx) + missing_line(ctx) + unread_line(ctx)
        if text:
            yield DeltaEvent(round=ctx.round, key=key, text=text, offset=0)
        if drafted := drafted_answer(ctx):  # written by refine or the review: no call of its own
            text += drafted
        else:
            request = Request(answer_messages(ctx, documents), answer_facts(ctx))
            pieces = stream_within(ctx.budget, ctx.llm.stream_text(request, kind="final", key=key))
            async for piece in pieces:
                if isinstance(piece, Usage):
                    yield ctx.usage(piece)
                elif piece:
                    yield DeltaEvent(round=ctx.round, key=key, text=piece, offset=len(text))
                    text += piece
        written = text[len(head) :]  # the model's part, after the host's lines
        note = unsupported_claims(text, ctx, documents)
        note += arithmetic_note(ctx, written) + await sources_note(ctx, written)
        if not ctx.tasks:  # the host, not the model, says where the answer comes from
            note = f"{note}\n\n{OWN_KNOWLEDGE}"
        if drafted:
            async for event in drafted_deltas(ctx, key, text, note):
                yield event
            text += note
        elif note:
            yield DeltaEvent(round=ctx.round, key=key, text=note, offset=len(text))
            text += note
    yield MessageEvent(
        round=ctx.round,
        key=key,
        role="assistant",
        content=text,
        summary=first_sentence(text),
        documents=documents,
        success=ctx.outcome[0] != "failed",
        learnings=ctx.learnings,
        status=ctx.outcome[0],
    )


def budget_answer(ctx: RoundContext, spent: str) -> str:
    """The answer when the budget is spent before it could be written: what stopped (the
    budget only when it cut a task short, else each task's own reason), then what was done."""
    if any(t.stop_code in BUDGET_CODES for t in ctx.tasks):
        head = f"I stopped early: {spent}"
    else:
        head = f"The answer could not be written: {spent}"
    return f"{head}\n\n{outcome_list(ctx)}"


def drafted_answer(ctx: RoundContext) -> str:
    """The answer refine (with its stop) or the review (with its success) wrote, when the
    round's one task succeeded ("" when the answer needs a call of its own)."""
    if len(ctx.tasks) != 1 or ctx.tasks[0].status != "success":
        return ""
    return ctx.tasks[0].answer


async def drafted_deltas(ctx: RoundContext, key: str, text: str, note: str) -> AsyncIterator[Event]:
    """The deltas that complete an answer written with the task's last decision: its note
    after what was streamed, or, when the host put lines before it (or nothing was streamed),
    the whole text again as a new attempt."""
    attempt, streamed = ctx.streamed.get(key, ("", ""))
    if streamed and streamed == text:
        if note:
            yield DeltaEvent(
                round=ctx.round, key=key, text=note, offset=len(streamed), attempt=attempt
            )
        return
    yield DeltaEvent(round=ctx.round, key=key, text=text + note, offset=0, attempt="answer")


def answer_messages(ctx: RoundContext, documents: list[DocumentRef]) -> list[Message]:
    """The prompt of the final answer: grounded in what the tasks did and found; when the plan
    needed no task, the model answers from its own knowledge and the conversation."""
    if not ctx.tasks:
        history = render_history(ctx.history(), ctx.round, max_chars=ctx.state.caps.history_chars)
        unavailable = [f"{name}: {why}" for name, why in unavailable_actions(ctx).items()]
        messages = chat(
            "direct",
            ctx,
            language=ctx.state.language,
            history=history,
            missing=render_list(unavailable, empty="(none)"),
        )
        if unavailable:  # said last too: a small model follows what it read last
            note = "; ".join(unavailable)
            messages[-1]["content"] += f"{HOST_NOTE}not available here: {note})"
        if computed := calculation_note(ctx.state.prompt):  # exact, where a small model is not
            messages[-1]["content"] += f"{HOST_NOTE}computed exactly: {computed})"
        return messages
    return chat(
        "final",
        ctx,
        language=ctx.state.language,
        outcome=outcome_text(ctx),
        documents=documents_text(documents),
        results=results_text(ctx),
    )


def chat(name: str, ctx: RoundContext, **values: Any) -> list[Message]:
    """The answer's prompt shaped as a chat: the template (what was done, how to answer) as
    the system message, the user's own words as the last message, the one a model answers
    (small models otherwise answer, or echo, the prompt's last section)."""
    (instructions,) = build(name, system=False, **values)
    return [{"role": "system", "content": instructions["content"]}, user_message(ctx)]


def user_message(ctx: RoundContext) -> Message:
    """The user's request as they wrote it."""
    return {"role": "user", "content": ctx.state.prompt}


def failed_answer(ctx: RoundContext, documents: list[DocumentRef]) -> str:
    """The answer when no step succeeded: what was tried and why it failed, from the facts."""
    tasks = [
        f"- Task {task.number} ({task.item.objective}): "
        + (task.failure or task.stop_reason or task.status)
        for task in ctx.tasks
    ]
    if documents:
        kept = "Documents kept from the attempt: " + ", ".join(d.name for d in documents)
    else:
        kept = "No document was produced."
    head = "I could not complete this request. No step succeeded."
    if missing := missing_line(ctx).strip():
        head = f"{head}\n\n{missing}"
    return "\n\n".join([head, *tasks, kept])


def unavailable_answer(ctx: RoundContext, reason: str) -> MessageEvent:
    """The answer when the model could not be reached: why, as the error and the round's
    status say it."""
    text = f"I could not finish this request. {reason}"
    return MessageEvent(
        round=ctx.round,
        key=answer_key(ctx),
        role="assistant",
        content=text,
        summary=text,
        documents=produced_documents(ctx),
        success=False,
        status="failed",
    )


_MARKUP = re.compile(r"(?m)^\s*[#>]+|[*`]+|(?<!\w)_+|_+(?!\w)")
"""Markdown's heading and quote marks, emphasis and code ticks (not a name's underscores)."""


def first_sentence(text: str, limit: int = 240) -> str:
    """The answer's first sentence, as its summary."""
    plain = " ".join(_MARKUP.sub("", text).split())
    sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"
