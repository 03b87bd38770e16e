"""document.generateReport: a report written from documents, as Markdown, HTML and PDF."""

from __future__ import annotations

import asyncio
import re
from html import escape
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from workflows.engine.loop.faithfulness import (
    CAVEAT,
    check_sources,
    shortened,
    why,
    without_invented,
)
from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    InvalidModelOutput,
    ModelUnavailable,
    ProducedDocument,
    ToolBase,
)
from workflows.markdown import render_markdown
from workflows.tools.documents.mapreduce import (
    SAFETY,
    Source,
    chunk_budget,
    extractive_digest,
    final_answer,
    gather_material,
    is_demo,
    max_chunks,
    read_sources,
)

_CSS = """
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2430;
background:#fff;margin:0}
main{max-width:46rem;margin:0 auto;padding:2rem 1.25rem 4rem}
h1{font-size:1.9rem;line-height:1.2;margin:0 0 1.5rem}
h2{font-size:1.35rem;margin:2rem 0 .75rem;border-bottom:1px solid #e3e6ea;padding-bottom:.25rem}
h3{font-size:1.1rem;margin:1.5rem 0 .5rem}
a{color:#1b5fc1;word-break:break-word}
table{border-collapse:collapse;width:100%;margin:1rem 0;font-size:.95rem}
th,td{border:1px solid #d5d9de;padding:.4rem .6rem;text-align:left;vertical-align:top}
th{background:#f3f5f7}
pre{background:#f6f8fa;padding:.75rem;overflow-x:auto}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em}
blockquote{margin:1rem 0;padding:.25rem 1rem;border-left:4px solid #d5d9de;color:#4a5361}
@media print{main{max-width:none;padding:0}a{color:inherit}}
""".strip()


class DocumentGenerateReportParameters(BaseModel):
    """Business parameters of document.generateReport."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(None, max_length=200)
    """The report's title; defaults to the task objective."""


class DocumentGenerateReport(ToolBase):
    """Write a report from documents, with its sources, in Markdown, HTML and PDF."""

    name: ClassVar[str] = "document.generateReport"
    purpose: ClassVar[str] = "write a report file (Markdown, HTML and PDF) from documents"
    description: ClassVar[str] = (
        "Write a well-structured report from the referenced documents, listing its sources, "
        "as Markdown, HTML and PDF files."
    )
    Parameters: ClassVar[type[BaseModel]] = DocumentGenerateReportParameters
    uses_documents: ClassVar[bool] = True

    async def run(
        self, params: DocumentGenerateReportParameters, ctx: ActionContext
    ) -> ActionResult:
        """Read the inputs, have the model write the body, and render the three files."""
        if not ctx.documents:
            return _failure("document.generateReport needs at least one input document")
        sources, failures = await read_sources(ctx)
        if not sources:
            return _failure("; ".join(failures))
        title = report_title(params.title, ctx.objective)
        try:
            body, calls = await self._write(title, sources, ctx)
        except (ModelUnavailable, InvalidModelOutput) as error:
            return _failure(f"document.generateReport: the model call failed: {error}")
        if not body:
            return _failure("document.generateReport: the model wrote an empty report")
        checked = ""
        if not is_demo(ctx.llm):  # the demo's digest is the sources' own text
            body, checked = kept_to_sources(body, sources, title, ctx.objective)
        markdown = report_markdown(title, body, sources)
        stem = file_stem(title)
        # Laying out a PDF takes a while for a long report: off the event loop. fpdf2 is
        # imported here, on first use: importing it takes about half a second.
        from workflows.tools.documents.pdf import markdown_to_pdf

        font = ctx.settings.get("report_pdf_font")
        pdf = await asyncio.to_thread(markdown_to_pdf, title, markdown, font=font)
        documents = [
            ProducedDocument(name=f"{stem}.md", mime="text/markdown", data=markdown.encode()),
            ProducedDocument(
                name=f"{stem}.html",
                mime="text/html",
                data=report_html(title, markdown, ctx.language).encode(),
            ),
            ProducedDocument(
                name=f"{stem}.pdf",
                mime="application/pdf",
                data=pdf,
            ),
        ]
        notes = [
            f"report {title!r}: {len(body.split())} words from {len(sources)} source(s), "
            f"{calls} model call(s); Markdown, HTML and PDF",
            *([f"Source check: {checked}"] if checked else []),
        ]
        return ActionResult(
            success=True, label="report", documents=documents, notes=notes, unread=failures
        )

    async def _write(
        self, title: str, sources: list[Source], ctx: ActionContext
    ) -> tuple[str, int]:
        if is_demo(ctx.llm):
            return extractive_digest(sources), 0
        system = "\n".join(
            [
                "You write clear, well-structured reports from source documents.",
                SAFETY,
                f"Write in the user's language ({ctx.language}).",
            ]
        )
        task = f"Write the report {title!r}."
        if ctx.objective:
            task += f" Objective: {ctx.objective}"
        rules = (
            "Write the body of the report in Markdown: open with a short summary, then "
            "sections under '## ' headings, with lists or tables where they help. Base every "
            "statement on the inputs and name the document each fact comes from. Do not write "
            "a title line or a list of sources: both are added automatically."
        )
        material = await gather_material(
            ctx.llm,
            kind=self.name,
            system=system,
            task=task,
            sources=sources,
            budget=chunk_budget(ctx),
            limit=max_chunks(ctx),
        )
        body = await final_answer(
            ctx.llm, kind=self.name, system=system, task=task, material=material, rules=rules
        )
        return clean_body(body), material.calls


def kept_to_sources(
    body: str, sources: list[Source], title: str, objective: str
) -> tuple[str, str]:
    """The body checked against its sources (a string check, no model call): sentences with a
    figure or a quote the sources do not hold are taken out and listed at the end, other
    unsupported ones marked where they stand. Returns the body and the check's summary for
    the step ("" when there was nothing to check)."""
    check = check_sources(body, [s.extracted.text for s in sources], context=[title, objective])
    if not check.checked:
        return body, ""
    kept, removed = without_invented(body, check)
    summary = check.summary()
    if removed:
        summary += f" {len(removed)} sentence(s) with figures or quotes not in them taken out."
    lines = [f"_Checked against the sources by PowerOn: {summary} ({CAVEAT}.)_"]
    if removed:
        lines += ["", "Taken out (not in the sources):", ""]
        lines += [f"- {_escape_markdown(shortened(c.text, 300))}{why(c)}" for c in removed]
    return f"{kept}\n\n---\n\n" + "\n".join(lines), summary


def report_title(title: str | None, objective: str) -> str:
    """The given title, else the objective's first line, else "Report"; one line, capped."""
    for candidate in (title, objective):
        flat = " ".join((candidate or "").split())
        if flat:
            return flat[:120]
    return "Report"


def clean_body(body: str) -> str:
    """Drop a title line the model wrote anyway; the report adds its own."""
    lines = body.strip().splitlines()
    if lines and re.match(r"^#\s", lines[0]):
        lines = lines[1:]
    return "\n".join(lines).strip()


def report_markdown(title: str, body: str, sources: list[Source]) -> str:
    """Title, body and the numbered list of sources."""
    return f"# {title}\n\n{body}\n\n## Sources\n\n{sources_markdown(sources)}\n"


def sources_markdown(sources: list[Source]) -> str:
    """One numbered line per input: its name and, for fetched pages, the URL."""
    lines = []
    for number, source in enumerate(sources, start=1):
        name = _escape_markdown(source.label)
        url = source.ref.sourceUrl
        lines.append(f"{number}. {name} — <{url}>" if url and _is_web(url) else f"{number}. {name}")
    return "\n".join(lines)


def _is_web(url: str) -> bool:
    return bool(re.match(r"^https?://[^\s<>]+$", url))


def _escape_markdown(text: str) -> str:
    return re.sub(r"([\\`*_{}\[\]()#+!|<>])", r"\\\1", text)


def report_html(title: str, markdown: str, language: str) -> str:
    """A standalone HTML page: the sanitised report, inline CSS, no scripts or remote loads."""
    lang = language if re.fullmatch(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*", language) else "en"
    return (
        "<!doctype html>\n"
        f'<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{escape(title)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n"
        f"<body>\n<main>\n{render_markdown(markdown)}</main>\n</body>\n</html>\n"
    )


def file_stem(title: str) -> str:
    """A file name stem from the title: ASCII letters, digits and underscores."""
    stem = re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_").lower()[:60].rstrip("_")
    return stem or "report"


def _failure(error: str) -> ActionResult:
    return ActionResult(success=False, label="report", error=error)
