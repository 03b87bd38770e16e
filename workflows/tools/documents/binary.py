"""PDF and DOCX parsing with limits: the formats that can hide bombs and locks."""

from __future__ import annotations

import io
import re
from typing import Any

import docx
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from pypdf import PdfReader

from workflows.tools.documents.docx_archive import checked_docx
from workflows.tools.documents.extracted import (
    Extracted,
    ExtractionError,
    Limits,
    Section,
    markdown_table,
)

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

    lists = _Lists(document)
    listing = False  # the last block was a list: its next item joins it
    for block in document.iter_inner_content():
        if isinstance(block, Paragraph):
            text = block.text.strip()
            level = _heading_level(block.style.name if block.style is not None else "")
            item = lists.marker(block) if text and not level else None
            if level and text:
                flush()
                title, lines = text, [f"{'#' * level} {text}"]
            elif item and listing:
                lines[-1] += f"\n{item}{text}"
            elif item:
                lines.append(f"{item}{text}")
            elif text:
                lines.append(text)
            listing = bool(item) or (listing and not text)
        elif isinstance(block, Table):
            tables += 1
            lines.append(_docx_table(block, limits))
            listing = False
    flush()
    core = document.core_properties
    metadata: dict[str, Any] = {"tables": tables}
    if core.title:
        metadata["title"] = core.title[:200]
    if core.author:
        metadata["author"] = core.author[:200]
    return Extracted(kind="docx", sections=sections, metadata=metadata)


class _Lists:
    """Word's bulleted and numbered lists as Markdown's: a paragraph's numbering (its own, or
    its style's) says its level and whether it is numbered; numbered items count on."""

    INDENT = "    "

    def __init__(self, document: Any) -> None:
        self.formats: dict[tuple[str, int], str] = {}
        try:
            numbering = document.part.numbering_part.element
        except (KeyError, NotImplementedError):  # no numbering part: lists only by style
            numbering = None
        if numbering is not None:
            levels = {
                definition.get(qn("w:abstractNumId")): {
                    int(lvl.get(qn("w:ilvl"), "0")): _value(lvl, "w:numFmt")
                    for lvl in definition.findall(qn("w:lvl"))
                }
                for definition in numbering.findall(qn("w:abstractNum"))
            }
            for num in numbering.findall(qn("w:num")):
                for ilvl, fmt in levels.get(_value(num, "w:abstractNumId"), {}).items():
                    self.formats[(num.get(qn("w:numId")), ilvl)] = fmt
        self.counts: dict[tuple[str, int], int] = {}

    def marker(self, paragraph: Paragraph) -> str:
        """The paragraph's list marker, indented to its level ("- ", "2. "), or ""."""
        style = paragraph.style.name if paragraph.style is not None else ""
        named = re.fullmatch(r"List (Bullet|Number)(?: (\d))?", style)
        num_id, ilvl = _numbering(paragraph)
        if num_id is None and not named:
            return ""
        if num_id == "0":  # numbering switched off for this paragraph
            return ""
        level = ilvl if ilvl is not None else (int(named[2]) - 1 if named and named[2] else 0)
        fmt = self.formats.get((num_id or "", level))
        by_name = bool(named and named[1] == "Number")
        numbered = fmt not in ("bullet", "none", "") if fmt else by_name
        key = (num_id or style, level)
        for other in [k for k in self.counts if k[0] == key[0] and k[1] > level]:
            del self.counts[other]  # a deeper list starts again under a new item
        self.counts[key] = self.counts.get(key, 0) + 1
        mark = f"{self.counts[key]}. " if numbered else "- "
        return self.INDENT * min(level, 8) + mark


def _value(element: Any, child: str) -> str:
    """The w:val of an element's child ("" without one)."""
    found = element.find(qn(child))
    return found.get(qn("w:val"), "") if found is not None else ""


def _numbering(paragraph: Paragraph) -> tuple[str | None, int | None]:
    """A paragraph's numbering (numId, ilvl): its own, else its style's (or their bases')."""
    holders = [paragraph._p]
    style = paragraph.style
    while style is not None and len(holders) < 5:
        holders.append(style.element)
        style = style.base_style
    for holder in holders:
        # python-docx declares w:numPr's children as ZeroOrOne descriptors, not their types.
        num_pr: Any = holder.pPr.numPr if holder.pPr is not None else None
        if num_pr is not None and num_pr.numId is not None:
            ilvl = num_pr.ilvl.val if num_pr.ilvl is not None else None
            return str(num_pr.numId.val), ilvl
    return None, None


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
