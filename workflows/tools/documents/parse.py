"""Text and structure from the files users upload and actions produce, parsed with limits.

Every input is hostile until parsed: sizes are capped before a parser runs, DOCX archives
are checked for zip and XML entity bombs before python-docx opens them, and any parser
failure becomes an ExtractionError with a message fit to show the user.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import PurePosixPath
from typing import Any

from workflows.tools.documents.extracted import (
    Extracted,
    ExtractionError,
    Limits,
    Section,
    markdown_table,
)

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


_BY_MIME = {
    "application/pdf": "pdf",
    DOCX_MIME: "docx",
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/csv": "csv",
    "text/tab-separated-values": "csv",
    "application/json": "json",
    "text/plain": "text",
}
_BY_SUFFIX = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".csv": "csv",
    ".tsv": "csv",
    ".json": "json",
    ".txt": "text",
    ".text": "text",
    ".log": "text",
}
SUPPORTED_KINDS = ("pdf", "docx", "html", "markdown", "text", "csv", "json")
UNREADABLE = (
    "{name} cannot be read here: attach PDF, Word (.docx), HTML, Markdown, text, CSV or JSON files."
)
EMPTY = "{name} is empty: there is nothing in it to read."
"""Why an upload is refused at once (the page says it when the file is picked)."""


def detect_kind(name: str, mime: str) -> str | None:
    """The parser for a file, from its MIME type or else its name; None when unsupported."""
    base = mime.split(";")[0].strip().lower()
    if base in _BY_MIME:
        return _BY_MIME[base]
    if base.endswith("+json"):
        return "json"
    suffix = PurePosixPath(name.lower()).suffix
    if suffix in _BY_SUFFIX:
        return _BY_SUFFIX[suffix]
    return "text" if base.startswith("text/") else None


def readable_types() -> dict[str, list[str]]:
    """What detect_kind reads, as data for the upload's file picker (its `accept`) and the
    page's check when files are picked: MIME types, name suffixes, MIME type endings and
    beginnings."""
    return {
        "mimeTypes": sorted(_BY_MIME),
        "suffixes": sorted(_BY_SUFFIX),
        "mimeEndings": ["+json"],
        "mimeBeginnings": ["text/"],
    }


def refusal(name: str, mime: str, size: int | None) -> str:
    """Why a file is refused when it is attached ("" when it is not): empty, or of a type
    no reader reads. The page says it when the file is picked, its upload view and the API's
    refuse the file with the same words."""
    if not size:
        return EMPTY.format(name=name)
    if detect_kind(name, mime) is None:
        return UNREADABLE.format(name=name)
    return ""


def accept_attribute() -> str:
    """The file picker's `accept`: every name suffix and MIME type detect_kind reads."""
    types = readable_types()
    return ",".join([*types["suffixes"], *types["mimeTypes"], "text/*"])


def extract(data: bytes, *, name: str, mime: str, limits: Limits | None = None) -> Extracted:
    """Parse one document. Raises ExtractionError for anything it cannot read safely."""
    limits = limits or Limits()
    if len(data) > limits.max_bytes:
        raise ExtractionError(
            f"{name} is too large to read ({len(data):,} bytes; the limit is {limits.max_bytes:,})"
        )
    kind = detect_kind(name, mime)
    if kind is None and data.startswith(b"%PDF-"):
        kind = "pdf"
    if kind is None:
        raise ExtractionError(
            f"{name} has an unsupported type ({mime or 'unknown'}); "
            f"supported: {', '.join(SUPPORTED_KINDS)}"
        )
    try:
        result = _PARSERS[kind](data, limits)
    except ExtractionError as error:
        raise ExtractionError(f"{name}: {error}") from None
    except RecursionError:
        raise ExtractionError(f"{name}: the {kind} structure is nested too deeply") from None
    except MemoryError:
        raise ExtractionError(
            f"{name}: reading the {kind} content needs more than "
            f"{limits.max_memory / 1_000_000:g} MB of memory"
        ) from None
    except Exception as error:  # A parser choking on a malformed file is an expected outcome.
        detail = str(error)[:200] or type(error).__name__
        raise ExtractionError(f"{name} is not a readable {kind} file ({detail})") from None
    return _cap_chars(result, limits.max_chars)


def _cap_chars(result: Extracted, max_chars: int) -> Extracted:
    kept: list[Section] = []
    budget = max_chars
    for section in result.sections:
        if budget <= 0:
            result.truncated = True
            break
        if len(section.text) > budget:
            section = section.model_copy(update={"text": section.text[:budget]})
            result.truncated = True
        kept.append(section)
        budget -= len(section.text)
    result.sections = kept
    return result


# --- Plain text, Markdown, JSON, CSV -------------------------------------------------------


def decode_text(data: bytes) -> str:
    """Decode text bytes: UTF-8 (with or without BOM), UTF-16 with a BOM, else Latin-1."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _text(data: bytes, limits: Limits) -> Extracted:
    text = decode_text(data).replace("\r\n", "\n").strip()
    return Extracted(kind="text", sections=[Section(title="Text", text=text)])


_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def markdown_sections(text: str, *, default_title: str = "Introduction") -> list[Section]:
    """Split Markdown into sections at ATX headings, ignoring '#' lines inside code fences."""
    sections: list[Section] = []
    title, fence = default_title, None
    lines: list[str] = []
    for line in text.splitlines():
        if match := _FENCE.match(line):
            fence = None if fence == match[1] else fence or match[1]
        heading = None if fence else _HEADING.match(line)
        if heading:
            if "\n".join(lines).strip():
                sections.append(Section(title=title, text="\n".join(lines).strip()))
            title, lines = heading[2] or default_title, [line]
        else:
            lines.append(line)
    if "\n".join(lines).strip():
        sections.append(Section(title=title, text="\n".join(lines).strip()))
    return sections


def _markdown(data: bytes, limits: Limits) -> Extracted:
    text = decode_text(data).replace("\r\n", "\n")
    return Extracted(kind="markdown", sections=markdown_sections(text))


def _json(data: bytes, limits: Limits) -> Extracted:
    try:
        value = json.loads(decode_text(data))
    except json.JSONDecodeError as error:
        raise ExtractionError(f"not valid JSON ({error})") from None
    outline = "\n".join(_json_outline(value, depth=0, limit=60))
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    metadata: dict[str, Any] = {"type": type(value).__name__}
    if isinstance(value, dict):
        metadata["keys"] = list(value)[:50]
    elif isinstance(value, list):
        metadata["items"] = len(value)
    sections = [Section(title="Outline", text=outline), Section(title="Data", text=pretty)]
    return Extracted(kind="json", sections=sections, metadata=metadata)


def _json_outline(value: Any, *, depth: int, limit: int) -> Iterator[str]:
    """Key paths with value types, three levels deep, at most `limit` lines."""
    lines = list(_walk_json(value, "$", depth, 3))
    yield from lines[:limit]
    if len(lines) > limit:
        yield f"… {len(lines) - limit} more"


def _walk_json(value: Any, path: str, depth: int, max_depth: int) -> Iterator[str]:
    if isinstance(value, dict):
        yield f"{path}: object ({len(value)} keys)"
        if depth < max_depth:
            for key, child in list(value.items())[:40]:
                yield from _walk_json(child, f"{path}.{key}", depth + 1, max_depth)
    elif isinstance(value, list):
        yield f"{path}: array ({len(value)} items)"
        if value and depth < max_depth:
            yield from _walk_json(value[0], f"{path}[0]", depth + 1, max_depth)
    else:
        yield f"{path}: {type(value).__name__}"


def _csv(data: bytes, limits: Limits) -> Extracted:
    text = decode_text(data)
    try:
        dialect: Any = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    try:
        rows = [row for row in csv.reader(io.StringIO(text), dialect) if any(row)]
    except csv.Error as error:
        raise ExtractionError(f"not valid CSV ({error})") from None
    if not rows:
        raise ExtractionError("the CSV file has no rows")
    header, body = rows[0], rows[1:]
    summary = f"{len(body)} rows × {len(header)} columns: {', '.join(header)}"
    metadata = {
        "columns": header,
        "rows": len(body),
        "delimiter": dialect.delimiter,
        "preview": body[:5],
    }
    sections = [
        Section(title="Summary", text=summary),
        Section(title="Data", text=markdown_table(header, body, max_chars=limits.max_chars)),
    ]
    return Extracted(kind="csv", sections=sections, metadata=metadata)


# --- HTML --------------------------------------------------------------------------------


class _TextCollector(HTMLParser):
    """Visible text and the <title> of an HTML page, skipping script, style and the like."""

    SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"})

    def __init__(self, max_elements: int) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._elements = 0
        self._max_elements = max_elements

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # Counted before trafilatura builds its tree, whose size follows the element count.
        self._elements += 1
        if self._elements > self._max_elements:
            raise ExtractionError(f"too many HTML elements (more than {self._max_elements:,})")
        if tag == "title":
            self._in_title = True
        if tag in self.SKIP:
            self._skip += 1
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag in self.SKIP and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def _html(data: bytes, limits: Limits) -> Extracted:
    import trafilatura  # Imported on use: it is slow to import and most runs never need it.

    html = decode_text(data)
    collector = _TextCollector(limits.max_xml_elements)
    collector.feed(html)
    collector.close()
    title = " ".join(collector.title.split())
    markdown = trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_formatting=True
    )
    if not markdown:
        lines = (" ".join(line.split()) for line in "".join(collector.parts).splitlines())
        markdown = "\n\n".join(line for line in lines if line)
    sections = markdown_sections(markdown, default_title=title or "Content")
    return Extracted(kind="html", sections=sections, metadata={"title": title} if title else {})


# --- PDF and DOCX (in extract_binary.py; imported on use, their libraries are heavy) ----


def _pdf(data: bytes, limits: Limits) -> Extracted:
    from workflows.tools.documents.binary import parse_pdf

    return parse_pdf(data, limits)


def _docx(data: bytes, limits: Limits) -> Extracted:
    from workflows.tools.documents.binary import parse_docx

    return parse_docx(data, limits)


_PARSERS: dict[str, Callable[[bytes, Limits], Extracted]] = {
    "pdf": _pdf,
    "docx": _docx,
    "html": _html,
    "markdown": _markdown,
    "text": _text,
    "csv": _csv,
    "json": _json,
}
