"""PDF and DOCX parsing with limits: the formats that can hide bombs and locks."""

from __future__ import annotations

import io
import re
from typing import Any

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph
from pypdf import PdfReader

from .docx_archive import checked_docx
from .extracted import Extracted, ExtractionError, Limits, Section, markdown_table

# --- PDF ---------------------------------------------------------------------------------


def parse_pdf(data: bytes, limits: Limits) -> Extracted:
    """One section per page, up to the page and character caps; encrypted PDFs refused."""
    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        # Owner-password-only PDFs open with an empty user password; anything else cannot.
        try:
            opened = bool(reader.decrypt(""))
        except Exception:
            opened = False
        if not opened:
            raise ExtractionError("the PDF is encrypted and needs a password")
    total = len(reader.pages)
    sections: list[Section] = []
    chars = 0
    for number, page in enumerate(reader.pages, start=1):
        if number > limits.max_pages or chars > limits.max_chars:
            break
        text = (page.extract_text() or "").strip()
        chars += len(text)
        sections.append(Section(title=f"Page {number}", text=text, page=number))
    metadata: dict[str, Any] = {"pages": total}
    info = reader.metadata
    if info is not None:
        for key in ("title", "author", "subject"):
            value = getattr(info, key, None)
            if value:
                metadata[key] = str(value)[:200]
    return Extracted(
        kind="pdf", sections=sections, metadata=metadata, truncated=len(sections) < total
    )


# --- DOCX --------------------------------------------------------------------------------


def parse_docx(data: bytes, limits: Limits) -> Extracted:
    """Sections at headings, tables as Markdown, read from the archive's checked parts."""
    document = docx.Document(io.BytesIO(checked_docx(data, limits)))
    sections: list[Section] = []
    title = "Introduction"
    lines: list[str] = []
    tables = 0

    def flush() -> None:
        if any(line.strip() for line in lines):
            sections.append(Section(title=title, text="\n\n".join(lines).strip()))

    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = block.text.strip()
            level = _heading_level(block.style.name if block.style is not None else "")
            if level and text:
                flush()
                title, lines = text, [f"{'#' * level} {text}"]
            elif text:
                lines.append(text)
        elif isinstance(block, Table):
            tables += 1
            lines.append(_docx_table(block, limits))
    flush()
    core = document.core_properties
    metadata: dict[str, Any] = {"tables": tables}
    if core.title:
        metadata["title"] = core.title[:200]
    if core.author:
        metadata["author"] = core.author[:200]
    return Extracted(kind="docx", sections=sections, metadata=metadata)


def _heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return min(int(match[1]), 6) if match else 0


def _docx_table(table: Any, limits: Limits) -> str:
    rows = [[cell.text.strip() for cell in row.cells] for row in table.rows]
    if not rows:
        return ""
    return markdown_table(rows[0], rows[1:], max_chars=limits.max_chars)
