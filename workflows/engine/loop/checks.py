"""The host's checks of an answer, said under it: arithmetic the request asked for, computed;
sentences and figures checked against the documents the answer was written from.

Both are string work on what the host holds, without a model call (see `asked.py` and
`faithfulness.py`); what they find is a note for the reader, never a silent edit of an answer
that has already streamed.
"""

from __future__ import annotations

import html
import re

from workflows.engine.loop.asked import unchecked_results
from workflows.engine.loop.core import RoundContext
from workflows.engine.loop.faithfulness import check_sources
from workflows.engine.records.protocols import DocumentRef

SOURCE_CHARS = 200_000
"""At most this much of each source is read for the check."""
_TEXT_MIMES = ("application/json", "application/xml", "application/x-ndjson")
_HIDDEN = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def readable(ref: DocumentRef) -> bool:
    """Whether a document's text can be read without a parser (text, Markdown, HTML, JSON)."""
    mime = ref.mime.split(";")[0].strip().lower()
    return mime.startswith("text/") or mime in _TEXT_MIMES or mime.endswith(("+json", "+xml"))


def as_text(ref: DocumentRef, data: bytes) -> str:
    """A readable document's text (an HTML page without its markup)."""
    text = data[:SOURCE_CHARS].decode("utf-8", "replace")
    if "html" in ref.mime.lower():
        text = html.unescape(_TAG.sub(" ", _HIDDEN.sub(" ", text)))
    return text


def source_refs(ctx: RoundContext) -> list[DocumentRef]:
    """The documents an answer may draw on as sources: the user's files and the pages fetched
    (what actions wrote is not a source: it is what is being checked)."""
    return [ref for ref in ctx.store.index() if ref.source in ("uploaded", "fetched")]


async def sources_note(ctx: RoundContext, answer: str) -> str:
    """The reader's note on how much of an answer written from documents the sources support
    ("" for an answer written without them, or with nothing to check)."""
    succeeded = any(step.observation.success for task in ctx.tasks for step in task.steps)
    refs = source_refs(ctx)
    if not ctx.tasks or not succeeded or not refs or not answer.strip():
        return ""
    unread = [ref.name for ref in refs if not readable(ref)]
    if unread:
        names = ", ".join(f"“{name}”" for name in unread[:3])
        return f"\n\n> Not checked against the sources: {names} cannot be read as plain text here."
    texts = [as_text(ref, await ctx.store.read(ref)) for ref in refs]
    history = [entry.content for entry in ctx.history() if entry.role == "user"]
    return check_sources(answer, texts, context=[ctx.state.prompt, *history]).note()


def arithmetic_note(ctx: RoundContext, answer: str) -> str:
    """The request's arithmetic computed by the host, when the answer does not state the
    result ("" when it does, or when there is none)."""
    missed = unchecked_results(ctx.state.prompt, answer)
    if not missed:
        return ""
    done = "; ".join(f"{expression} = {value}" for expression, value in missed)
    return f"\n\n> Computed by PowerOn: {done} (the answer above does not give this result)."
