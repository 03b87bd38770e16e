"""Builders for the documents the document-tool tests read: real files made on the spot."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import docx
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter

from workflows.engine.records.protocols import ActionContext, DocumentRef
from workflows.engine.testing import MemoryStore, ScriptedLLM
from workflows.tools.documents.parse import DOCX_MIME

LOL_XML = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n<!ENTITY lol "lol">\n'
    b'<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">\n'
    b'<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">\n'
    b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">\n'
    b'<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">\n'
    b'<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">\n'
    b'<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">\n'
    b'<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">\n'
    b'<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">\n'
    b'<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">\n'
    b"]>\n"
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
    b"<w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
)


def make_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A PDF with one page per string."""
    pdf = FPDF()
    if title:
        pdf.set_title(title)
    for text in pages:
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def encrypt_pdf(data: bytes, *, user_password: str) -> bytes:
    """The same PDF, encrypted with AES-256."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_text(data: bytes) -> str:
    """All the text of a PDF, read back with pypdf."""
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


def make_docx(*, title: str = "Quarterly review") -> bytes:
    """A DOCX with a title, two headed sections, paragraphs and a table."""
    document = docx.Document()
    document.core_properties.title = title
    document.add_heading("Overview", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_heading("Figures", level=2)
    document.add_paragraph("The table lists the totals.")
    table = document.add_table(rows=3, cols=2)
    for row, cells in enumerate([("Region", "Total"), ("North", "120"), ("South", "95")]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def rebuild_docx(data: bytes, *, replace: dict[str, bytes] | None = None, **extra: bytes) -> bytes:
    """A copy of a DOCX archive with some parts replaced and extra parts added."""
    replace = replace or {}
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info, replace.get(info.filename, source.read(info)))
        for name, content in extra.items():
            target.writestr(name.replace("__", "/"), content)
    return out.getvalue()


def context(
    *files: tuple[str, str, bytes],
    llm: ScriptedLLM | None = None,
    settings: dict[str, Any] | None = None,
    objective: str = "",
) -> ActionContext:
    """An ActionContext whose input documents are the given (name, mime, data) uploads."""
    store = MemoryStore()
    refs: list[DocumentRef] = [
        store.add(name, mime, data, label="round1_uploads") for name, mime, data in files
    ]
    return ActionContext(
        documents=refs,
        store=store,
        llm=llm or ScriptedLLM(),
        settings=settings or {},
        objective=objective,
    )


def sample_files() -> list[tuple[str, str, bytes]]:
    """One small file of each supported type."""
    html = (
        "<html><head><title>Field notes</title><script>steal()</script></head><body>"
        "<h1>Field notes</h1><p>Otters were seen near the bridge.</p></body></html>"
    )
    return [
        ("notes.pdf", "application/pdf", make_pdf(["First page.", "Second page."])),
        ("review.docx", DOCX_MIME, make_docx()),
        ("page.html", "text/html", html.encode()),
        ("readme.md", "text/markdown", b"# Readme\n\nIntro.\n\n## Usage\n\nRun it."),
        ("plain.txt", "text/plain", b"Just some text."),
        ("data.csv", "text/csv", b"name,score\nada,3\nbob,5\n"),
        ("data.json", "application/json", json.dumps({"items": [{"id": 1}]}).encode()),
    ]
