"""document.extract: the text and structure of documents, and what the model finds in them.

document.generateReport lives in report.py and is re-exported here.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    InvalidModelOutput,
    ModelUnavailable,
    ProducedDocument,
    ToolBase,
)
from workflows.tools.documents.mapreduce import (
    DEMO_NOTE,
    SAFETY,
    Source,
    chunk_budget,
    final_answer,
    gather_material,
    is_demo,
    max_chunks,
    read_sources,
    source_label,
)
from workflows.tools.documents.report import DocumentGenerateReport

__all__ = ["DocumentExtract", "DocumentGenerateReport", "render_extracted"]

_SNIPPET_CHARS = 160


class DocumentExtractParameters(BaseModel):
    """Business parameters of document.extract."""

    model_config = ConfigDict(extra="forbid")

    aiPrompt: str | None = Field(None, max_length=4_000)
    """What to pull out of each document (e.g. "all deadlines and amounts"); empty for the
    plain text and structure."""


class DocumentExtract(ToolBase):
    """Read documents (PDF, DOCX, HTML, Markdown, text, CSV, JSON) into Markdown."""

    name: ClassVar[str] = "document.extract"
    purpose: ClassVar[str] = "the text of documents as Markdown (an AI extraction with aiPrompt)"
    description: ClassVar[str] = (
        "Extract the text and structure (pages, sections, tables) of the referenced "
        "documents as Markdown; with aiPrompt, have the AI pull out what it asks for."
    )
    Parameters: ClassVar[type[BaseModel]] = DocumentExtractParameters
    uses_documents: ClassVar[bool] = True

    async def run(self, params: DocumentExtractParameters, ctx: ActionContext) -> ActionResult:
        """One Markdown document per readable input, previews in the notes; the inputs that
        could not be read, with why, apart (`unread`: the observation keeps them whole)."""
        if not ctx.documents:
            return _failure("document.extract needs at least one input document")
        sources, failures = await read_sources(ctx)
        if not sources:
            return _failure("; ".join(failures), notes=failures)
        documents: list[ProducedDocument] = []
        notes: list[str] = []
        ask = bool(params.aiPrompt) and not is_demo(ctx.llm)
        if params.aiPrompt and not ask:
            notes.append(f"{DEMO_NOTE}: aiPrompt ignored, plain extraction returned")
        for source in sources:
            if ask and params.aiPrompt:
                try:
                    answer, calls = await self._ask(params.aiPrompt, source, ctx)
                except (ModelUnavailable, InvalidModelOutput) as error:
                    return _failure(f"document.extract: the model call failed: {error}")
                text = render_answer(source, params.aiPrompt, answer)
                notes.append(f"{source.label}: {_snippet(answer)} ({calls} model call(s))")
            else:
                text = render_extracted(source)
                notes.append(_preview_note(source))
            documents.append(_markdown_document(source, text))
        return ActionResult(
            success=True,
            label="extracted",
            documents=documents,
            notes=notes,
            unread=failures,
        )

    async def _ask(self, prompt: str, source: Source, ctx: ActionContext) -> tuple[str, int]:
        system = "\n".join(
            [
                "You extract information from a document for a user's task.",
                SAFETY,
                f"Write in the user's language ({ctx.language}) unless the task says otherwise.",
            ]
        )
        material = await gather_material(
            ctx.llm,
            kind=self.name,
            system=system,
            task=prompt,
            sources=[source],
            budget=chunk_budget(ctx),
            limit=max_chunks(ctx),
        )
        rules = (
            "Answer in Markdown with exactly what the task asks for, citing pages or sections "
            "where the document has them. Say plainly when the document does not contain it."
        )
        answer = await final_answer(
            ctx.llm, kind=self.name, system=system, task=prompt, material=material, rules=rules
        )
        return answer, material.calls


def render_extracted(source: Source) -> str:
    """A document's sections as Markdown, with page numbers where it has them."""
    extracted = source.extracted
    lines = [f"# {source.label}", "", f"_{_facts(source)}_", ""]
    for section in extracted.sections:
        if section.page is not None:
            lines += [f"## Page {section.page}", ""]
        elif not section.text.lstrip().startswith("#"):
            lines += [f"## {section.title}", ""]
        lines += [section.text or "_(no text)_", ""]
    if extracted.truncated:
        lines.append("_The document was cut short at the reading limit._")
    return "\n".join(lines).rstrip() + "\n"


def render_answer(source: Source, prompt: str, answer: str) -> str:
    """The model's extraction, headed by the request and followed by the outline it read."""
    outline = ", ".join(
        f"p. {section.page}" if section.page is not None else section.title
        for section in source.extracted.sections[:30]
    )
    return (
        f"# {source.label}\n\n_Request: {' '.join(prompt.split())}_\n\n{answer.strip()}\n\n"
        f"---\n\n_{_facts(source)}. Read: {outline}_\n"
    )


def _facts(source: Source) -> str:
    extracted = source.extracted
    facts = [extracted.kind.upper(), f"{len(extracted.sections)} section(s)"]
    if pages := extracted.metadata.get("pages"):
        facts[1] = f"{pages} page(s)"
    if title := extracted.metadata.get("title"):
        facts.append(f"title: {source_label(str(title))}")
    if source.ref.sourceUrl:
        facts.append(f"source: {source.ref.sourceUrl}")
    return ", ".join(facts)


def _preview_note(source: Source) -> str:
    sections = [section for section in source.extracted.sections if section.text.strip()]
    where = "" if not sections else _where(sections[0].title, sections[0].page)
    first = _snippet(sections[0].text) if sections else "(no text)"
    return f"{source.label}: {_facts(source)}; {where}{first}"


def _where(title: str, page: int | None) -> str:
    return f"p. {page}: " if page is not None else f"{source_label(title)[:40]}: "


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET_CHARS else flat[: _SNIPPET_CHARS - 1] + "…"


def _markdown_document(source: Source, text: str) -> ProducedDocument:
    stem = re.sub(r"[^\w.-]+", "_", PurePosixPath(source.ref.name).stem).strip("._")[:80]
    stem = stem or "document"
    return ProducedDocument(name=f"{stem}.md", mime="text/markdown", data=text.encode())


def _failure(error: str, *, notes: list[str] | None = None) -> ActionResult:
    return ActionResult(success=False, label="extracted", error=error, notes=notes or [])
