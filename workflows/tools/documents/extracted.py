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

    @computed_field  # type: ignore[prop-decorator]  # mypy's known limit on decorated properties
    @property
    def text(self) -> str:
        """All sections' text, in order."""
        return "\n\n".join(section.text for section in self.sections if section.text)


@dataclass(frozen=True)
class Limits:
    """Caps that keep a hostile file from exhausting memory or time."""

    max_bytes: int = 20 * 1024 * 1024
    """The largest input read: the host sets it to its upload limit (what it accepts, it
    reads); 20 MiB, the upload limit's default, otherwise."""
    max_chars: int = 1_000_000
    max_pages: int = 300
    max_zip_entries: int = 2_000
    max_zip_bytes: int = 100_000_000
    """What a DOCX archive's members may inflate to, together (counted as they inflate)."""
    max_zip_ratio: int = 200
    """Largest compression ratio a single archive member (over 1 MB) may have."""
    max_xml_elements: int = 1_000_000
    """XML elements a DOCX may hold, all its parts together."""
    max_xml_depth: int = 200
    """How deeply a DOCX's XML elements may nest."""
    max_memory: int = 512_000_000
    """Address space the parsing child process may add to what it starts with."""
    max_seconds: float = 30.0
    """Wall-clock time one document's parse may take before its process is killed."""

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> Limits:
        """Limits from the host's tool settings (document_max_bytes, _max_chars, _max_pages,
        _max_xml_elements, _parse_memory_mb, _parse_timeout)."""
        default = cls()
        memory_mb = settings.get("document_parse_memory_mb", default.max_memory // 1_000_000)
        return cls(
            max_bytes=int(settings.get("document_max_bytes", default.max_bytes)),
            max_chars=int(settings.get("document_max_chars", default.max_chars)),
            max_pages=int(settings.get("document_max_pages", default.max_pages)),
            max_xml_elements=int(
                settings.get("document_max_xml_elements", default.max_xml_elements)
            ),
            max_memory=int(memory_mb) * 1_000_000,
            max_seconds=float(settings.get("document_parse_timeout", default.max_seconds)),
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
