"""ai.process: the model works over the referenced documents and writes a new one."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    OutputInvalid,
    Source,
    chunk_budget,
    describe,
    extractive_digest,
    final_answer,
    gather_material,
    is_demo,
    max_chunks,
    read_sources,
)

Format = Literal["markdown", "json", "csv", "text"]

_FORMAT_ALIASES = {
    "md": "markdown",
    "markdown": "markdown",
    "text/markdown": "markdown",
    "json": "json",
    "application/json": "json",
    "csv": "csv",
    "text/csv": "csv",
    "txt": "text",
    "text": "text",
    "plain": "text",
    "text/plain": "text",
}
_FILES = {
    "markdown": ("result.md", "text/markdown"),
    "json": ("result.json", "application/json"),
    "csv": ("result.csv", "text/csv"),
    "text": ("result.txt", "text/plain"),
}
_MODES = {
    "basic": "Be concise: cover the essentials.",
    "advanced": "Analyse in depth: compare, explain causes and implications, and point out "
    "gaps or contradictions between the sources.",
    "detailed": "Be thorough: cover every relevant point with its specifics (figures, names, "
    "dates) and say which document each comes from.",
}
_RULES = {
    "markdown": "Answer as a well-structured Markdown narrative (headings, lists and tables "
    "where they help). Say which document facts come from.",
    "text": "Answer in plain text, without Markdown markup.",
    "json": "Answer with valid JSON only (RFC 8259): no prose and no code fence around it.",
    "csv": "Answer with CSV only: a header row, then one row per record, comma-separated, "
    "fields quoted when they contain commas, quotes or line breaks; no prose and no code "
    "fence.",
}


class AiProcessParameters(BaseModel):
    """Business parameters of ai.process."""

    model_config = ConfigDict(extra="forbid")

    aiPrompt: str = Field(min_length=1, max_length=4_000)
    """What the model should do with the documents."""
    processingMode: Literal["basic", "advanced", "detailed"] = "basic"
    """How deep to go: basic for the essentials, advanced for analysis, detailed for all."""
    includeMetadata: bool = False
    """Show the model each document's type, size and metadata, and list them in the result."""
    customInstructions: str | None = Field(None, max_length=2_000)
    """Extra instructions on tone, structure or audience."""
    expectedDocumentFormats: list[Format] = Field(default_factory=list, max_length=3)
    """Structured outputs wanted (json, csv); empty means a Markdown narrative."""

    @field_validator("expectedDocumentFormats", mode="before")
    @classmethod
    def _normalise_formats(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            value = [part for part in value.replace(",", " ").split() if part]
        if not isinstance(value, list):
            return value
        names = [str(item).strip().lower().lstrip(".") for item in value]
        return list(dict.fromkeys(_FORMAT_ALIASES.get(name, name) for name in names))


class AiProcess(ToolBase):
    """Ask the model to work over documents: summarise, analyse, compare, convert."""

    name: ClassVar[str] = "ai.process"
    purpose: ClassVar[str] = "have the AI summarise, analyse or transform documents into text"
    description: ClassVar[str] = (
        "Have the AI work over the referenced documents (summarise, analyse, compare, "
        "transform) and write the result as Markdown, or as JSON/CSV when asked."
    )
    Parameters: ClassVar[type[BaseModel]] = AiProcessParameters
    uses_documents: ClassVar[bool] = True

    async def run(self, params: AiProcessParameters, ctx: ActionContext) -> ActionResult:
        """Read the inputs, run the model over them, validate and return each format."""
        sources, failures = await read_sources(ctx)
        if ctx.documents and not sources:
            return ActionResult(
                success=False, label="processed", error="; ".join(failures), notes=failures
            )
        system = self._system(params, ctx)
        formats = params.expectedDocumentFormats or ["markdown"]
        if is_demo(ctx.llm):
            return _demo_result(formats, sources, failures)
        try:
            material = await gather_material(
                ctx.llm,
                kind=self.name,
                system=system,
                task=params.aiPrompt,
                sources=sources,
                budget=chunk_budget(ctx),
                limit=max_chunks(ctx),
                with_metadata=params.includeMetadata,
            )
            documents = []
            for fmt in formats:
                text = await final_answer(
                    ctx.llm,
                    kind=self.name,
                    system=system,
                    task=params.aiPrompt,
                    material=material,
                    rules=_RULES[fmt],
                    validate=_VALIDATORS.get(fmt),
                )
                if fmt == "markdown" and params.includeMetadata and sources:
                    text = f"{text}\n\n## Sources\n\n" + _source_lines(sources)
                documents.append(_document(fmt, text))
        except (ModelUnavailable, InvalidModelOutput, OutputInvalid) as error:
            return ActionResult(success=False, label="processed", error=f"ai.process: {error}")
        notes = [
            f"{len(sources)} document(s) read, {material.calls} model call(s), "
            f"output: {', '.join(formats)}",
            *material.notes,
        ]
        return ActionResult(
            success=True, label="processed", documents=documents, notes=notes, unread=failures
        )

    @staticmethod
    def _system(params: AiProcessParameters, ctx: ActionContext) -> str:
        lines = [
            "You process documents for a user's task.",
            SAFETY,
            _MODES[params.processingMode],
            f"Write in the user's language ({ctx.language}) unless the task says otherwise.",
        ]
        if params.customInstructions:
            lines.append(f"Further instructions: {params.customInstructions}")
        return "\n".join(lines)


def _demo_result(
    formats: Sequence[str], sources: list[Source], failures: list[str]
) -> ActionResult:
    """Without a language model only a Markdown digest of the inputs can be offered."""
    if set(formats) - {"markdown", "text"}:
        error = f"ai.process needs a language model for {', '.join(formats)} output"
        return ActionResult(success=False, label="processed", error=error)
    digest = extractive_digest(sources) if sources else "_No input documents._"
    notes = [DEMO_NOTE]
    return ActionResult(
        success=True,
        label="processed",
        documents=[_document("markdown", digest)],
        notes=notes,
        unread=failures,
    )


def _source_lines(sources: list[Source]) -> str:
    return "\n".join(f"- {source.label}: {describe(source)}" for source in sources)


def _document(fmt: str, text: str) -> ProducedDocument:
    name, mime = _FILES[fmt]
    return ProducedDocument(name=name, mime=mime, data=(text.rstrip() + "\n").encode())


def validate_json(text: str) -> str:
    """Pretty-printed JSON, or ValueError saying where it breaks."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    return json.dumps(value, indent=2, ensure_ascii=False)


def validate_csv(text: str) -> str:
    """The CSV as given, or ValueError when it has no data rows or ragged rows."""
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as error:
        raise ValueError(f"not valid CSV ({error})") from None
    if len(rows) < 2:
        raise ValueError("CSV needs a header row and at least one data row")
    width = len(rows[0])
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != width:
            raise ValueError(
                f"row {number} has {len(row)} fields but the header has {width} "
                "(quote fields that contain commas)"
            )
    return text


_VALIDATORS = {"json": validate_json, "csv": validate_csv}
