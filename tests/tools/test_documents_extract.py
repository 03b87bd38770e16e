"""Parsing documents: text and structure from each supported type."""

from __future__ import annotations

import json

import pytest

from tests.tools._documents_helpers import make_docx, make_pdf
from workflows.tools.documents.parse import DOCX_MIME, ExtractionError, Limits, detect_kind, extract


def test_pdf_gives_one_section_per_page():
    """Each PDF page becomes a section carrying its page number; metadata counts pages."""
    result = extract(make_pdf(["Alpha", "Beta"], title="Deck"), name="d.pdf", mime="")
    assert [(s.title, s.text, s.page) for s in result.sections] == [
        ("Page 1", "Alpha", 1),
        ("Page 2", "Beta", 2),
    ]
    assert result.metadata == {"pages": 2, "title": "Deck"}
    assert not result.truncated


def test_pdf_page_cap_truncates():
    """Pages past the cap are not read, and the result says it was cut short."""
    result = extract(make_pdf(["a", "b", "c"]), name="d.pdf", mime="", limits=Limits(max_pages=2))
    assert [s.page for s in result.sections] == [1, 2]
    assert result.truncated
    assert result.metadata["pages"] == 3


def test_docx_headings_become_sections_and_tables_markdown():
    """DOCX headings open sections; tables come out as Markdown tables in place."""
    result = extract(make_docx(), name="r.docx", mime=DOCX_MIME)
    assert [s.title for s in result.sections] == ["Overview", "Figures"]
    assert "Revenue grew" in result.sections[0].text
    assert "| Region | Total |\n|---|---|\n| North | 120 |" in result.sections[1].text
    assert result.metadata["tables"] == 1
    assert result.metadata["title"] == "Quarterly review"


def test_html_main_text_without_scripts():
    """HTML gives its readable text and title; script content never appears."""
    html = (
        b"<html><head><title>T</title><script>var secret=1</script></head><body>"
        b"<p>Visible words here.</p><script>steal()</script></body></html>"
    )
    result = extract(html, name="p.html", mime="text/html")
    assert "Visible words here." in result.text
    assert "steal" not in result.text and "secret" not in result.text
    assert result.metadata["title"] == "T"


def test_markdown_sections_by_heading_ignore_code_fences():
    """Markdown splits at headings, but not at '#' lines inside a fenced code block."""
    text = b"# One\n\nintro\n\n```\n# comment\n```\n\n## Two\n\nbody"
    result = extract(text, name="x.md", mime="text/markdown")
    assert [s.title for s in result.sections] == ["One", "Two"]
    assert "# comment" in result.sections[0].text


def test_plain_text_decodes_utf8_and_latin1():
    """Text decodes as UTF-8, falling back to Latin-1 instead of failing."""
    assert extract("héllo".encode(), name="a.txt", mime="text/plain").text == "héllo"
    assert extract("héllo".encode("latin-1"), name="a.txt", mime="").text == "héllo"


def test_csv_header_row_count_and_preview():
    """CSV gives its columns, the number of data rows, a preview and a Markdown table."""
    data = b"name;score\nada;3\nbob;5\ncy;7\n"
    result = extract(data, name="s.csv", mime="text/csv")
    assert result.metadata["columns"] == ["name", "score"]
    assert result.metadata["rows"] == 3
    assert result.metadata["preview"][0] == ["ada", "3"]
    assert result.sections[0].text == "3 rows × 2 columns: name, score"
    assert "| bob | 5 |" in result.sections[1].text


def test_json_pretty_with_outline():
    """JSON is pretty-printed, with an outline of key paths and types first."""
    data = json.dumps({"items": [{"id": 1, "tags": ["a"]}], "name": "x"}).encode()
    result = extract(data, name="d.json", mime="application/json")
    outline = result.sections[0].text
    assert "$.items: array (1 items)" in outline
    assert "$.items[0].id: int" in outline
    assert '"name": "x"' in result.sections[1].text
    assert result.metadata["keys"] == ["items", "name"]


def test_kind_detection_by_mime_then_name():
    """The MIME type decides, the file name is the fallback, unknown types get None."""
    assert detect_kind("x.bin", "application/pdf") == "pdf"
    assert detect_kind("x.DOCX", "application/octet-stream") == "docx"
    assert detect_kind("x", "application/vnd.api+json") == "json"
    assert detect_kind("x.weird", "text/x-anything") == "text"
    assert detect_kind("x.exe", "application/octet-stream") is None


def test_unknown_type_is_a_clear_error():
    """An unsupported type names itself and the supported ones."""
    with pytest.raises(ExtractionError, match=r"unsupported type \(image/png\).*pdf, docx"):
        extract(b"\x89PNG", name="x.png", mime="image/png")


def test_pdf_sniffed_when_type_unknown():
    """A PDF uploaded as octet-stream is still recognised by its magic bytes."""
    result = extract(make_pdf(["Hi"]), name="upload", mime="application/octet-stream")
    assert result.kind == "pdf"


def test_char_cap_truncates_text():
    """Extracted text is cut at the character cap and marked truncated."""
    result = extract(b"x" * 5000, name="a.txt", mime="text/plain", limits=Limits(max_chars=100))
    assert len(result.text) == 100
    assert result.truncated


def test_limits_from_settings():
    """The byte, character and page caps come from the tool settings when given."""
    limits = Limits.from_settings(
        {"document_max_bytes": 10, "document_max_chars": 20, "document_max_pages": 3}
    )
    assert (limits.max_bytes, limits.max_chars, limits.max_pages) == (10, 20, 3)


def test_docx_lists_keep_their_bullets_numbers_and_levels():
    """Word's bulleted and numbered lists come out as Markdown lists: by their style or a
    paragraph's own numbering, nested by level, numbers counting on, one list per run of
    items."""
    import io

    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    document.add_paragraph("Before the list.")
    document.add_paragraph("Milk", style="List Bullet")
    document.add_paragraph("Oat", style="List Bullet 2")
    document.add_paragraph("Bread", style="List Bullet")
    bullets = document.styles["List Bullet"].element.pPr.numPr.numId.val
    own = document.add_paragraph("Butter")  # numbered by the paragraph itself, as Word does
    numbering = OxmlElement("w:numPr")
    for name, value in (("w:ilvl", "0"), ("w:numId", str(bullets))):
        element = OxmlElement(name)
        element.set(qn("w:val"), value)
        numbering.append(element)
    own._p.get_or_add_pPr().append(numbering)
    document.add_paragraph("Between.")
    for step in ("Open", "Pour", "Close"):
        document.add_paragraph(step, style="List Number")
    out = io.BytesIO()
    document.save(out)
    text = extract(out.getvalue(), name="l.docx", mime=DOCX_MIME).text
    assert "Before the list.\n\n- Milk\n    - Oat\n- Bread\n- Butter\n\nBetween." in text
    assert "Between.\n\n1. Open\n2. Pour\n3. Close" in text
