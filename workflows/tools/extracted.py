"""What extraction produces and the limits it runs under (shared by every parser)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, computed_field


class ExtractionError(ValueError):
    """A document could not be read; the message says why, in words a user understands."""


class Section(BaseModel):
    """One part of a document: a page of a PDF, a heading's section, a table."""

    title: str
    text: str
    page: int | None = None


class Extracted(BaseModel):
    """What a document says, in sections, plus facts about the file."""

    kind: str
    """pdf, docx, html, markdown, text, csv or json."""
    sections: list[Section]
    metadata: dict[str, Any] = Field(default_factory=dict)
    truncated: bool = False
    """True when the page or character cap cut the text short."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """All sections' text, in order."""
        return "\n\n".join(section.text for section in self.sections if section.text)


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile file from exhausting memory or time."""

    max_bytes: int = 20_000_000
    max_chars: int = 1_000_000
    max_pages: int = 300
    max_zip_entries: int = 2_000
    max_zip_bytes: int = 100_000_000
    """Sum of the declared uncompressed sizes of a DOCX archive."""
    max_zip_ratio: int = 200
    """Largest compression ratio a single archive member may claim."""

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Limits:
        """Limits from the host's tool settings (document_max_bytes/_chars/_pages)."""
        default = cls()
        return cls(
            max_bytes=int(settings.get("document_max_bytes", default.max_bytes)),
            max_chars=int(settings.get("document_max_chars", default.max_chars)),
            max_pages=int(settings.get("document_max_pages", default.max_pages)),
        )


def markdown_table(header: list[str], rows: list[list[str]], *, max_chars: int) -> str:
    """Rows as a Markdown pipe table, stopping before max_chars."""

    def line(cells: list[str]) -> str:
        cleaned = (cell.replace("|", "\\|").replace("\n", " ") for cell in cells)
        return "| " + " | ".join(cleaned) + " |"

    width = max(len(header), 1)
    out = [line(header), "|" + "---|" * width]
    size = sum(len(part) for part in out)
    for index, row in enumerate(rows):
        rendered = line((row + [""] * width)[:width] if len(row) < width else row)
        size += len(rendered) + 1
        if size > max_chars:
            out.append(f"\n… {len(rows) - index} more rows")
            break
        out.append(rendered)
    return "\n".join(out)
