"""Hostile files give a clear ExtractionError, never a crash, a hang or a memory blow-up."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.tools._documents_helpers import (
    LOL_XML,
    encrypt_pdf,
    make_docx,
    make_pdf,
    rebuild_docx,
)
from workflows.tools.documents.parse import DOCX_MIME, ExtractionError, Limits, extract


def test_encrypted_pdf_needs_a_password():
    """A PDF locked with a user password is refused with a message saying so."""
    locked = encrypt_pdf(make_pdf(["secret plans"]), user_password="hunter2")
    with pytest.raises(ExtractionError, match="encrypted and needs a password"):
        extract(locked, name="locked.pdf", mime="application/pdf")


def test_pdf_with_only_an_owner_password_opens():
    """Owner-password-only PDFs (an empty user password) are read normally."""
    locked = encrypt_pdf(make_pdf(["open plans"]), user_password="")
    assert extract(locked, name="p.pdf", mime="application/pdf").text == "open plans"


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9])
def test_truncated_pdf_is_a_clear_error(keep):
    """A PDF cut short is reported as unreadable, naming the file."""
    data = make_pdf(["page one", "page two"])
    with pytest.raises(ExtractionError, match=r"broken\.pdf is not a readable pdf file"):
        extract(data[: int(len(data) * keep)], name="broken.pdf", mime="application/pdf")


def test_garbage_labelled_pdf_is_a_clear_error():
    """Random bytes claiming to be a PDF give an ExtractionError."""
    with pytest.raises(ExtractionError, match="not a readable pdf"):
        extract(b"%PDF-1.7\n" + bytes(range(256)) * 10, name="x.pdf", mime="application/pdf")


def test_oversized_input_is_refused_before_parsing():
    """Input over the byte cap is refused without being parsed."""
    with pytest.raises(ExtractionError, match=r"too large to read \(2,000 bytes; the limit"):
        extract(b"a" * 2000, name="big.txt", mime="text/plain", limits=Limits(max_bytes=1000))


def test_docx_zip_bomb_is_refused_before_inflating():
    """A DOCX declaring a huge uncompressed part is refused from its declared sizes."""
    bomb = rebuild_docx(make_docx(), word__media__filler_bin=b"\0" * 150_000_000)
    assert len(bomb) < 1_000_000
    with pytest.raises(ExtractionError, match="would expand to"):
        extract(bomb, name="bomb.docx", mime=DOCX_MIME)


def test_docx_part_with_absurd_compression_ratio_is_refused():
    """A single part compressed far beyond any real document is treated as a bomb."""
    bomb = rebuild_docx(make_docx(), word__media__filler_bin=b"\0" * 20_000_000)
    with pytest.raises(ExtractionError, match="compression bomb"):
        extract(bomb, name="bomb.docx", mime=DOCX_MIME)


def test_docx_with_too_many_entries_is_refused():
    """An archive with thousands of members is refused before any is read."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for index in range(50):
            archive.writestr(f"part{index}.xml", "<a/>")
    with pytest.raises(ExtractionError, match="too many entries"):
        extract(out.getvalue(), name="x.docx", mime=DOCX_MIME, limits=Limits(max_zip_entries=20))


def test_docx_billion_laughs_is_refused():
    """Entity declarations in a DOCX XML part are refused before python-docx parses it."""
    bomb = rebuild_docx(make_docx(), replace={"word/document.xml": LOL_XML})
    with pytest.raises(ExtractionError, match="declares a DTD or entities"):
        extract(bomb, name="lol.docx", mime=DOCX_MIME)


def test_docx_external_entity_is_refused():
    """An XXE attempt (external entity pointing at a local file) is refused."""
    xxe = (
        b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body><w:p><w:r><w:t>&x;</w:t></w:r></w:p></w:body></w:document>"
    )
    bomb = rebuild_docx(make_docx(), replace={"word/document.xml": xxe})
    with pytest.raises(ExtractionError, match="declares a DTD or entities"):
        extract(bomb, name="xxe.docx", mime=DOCX_MIME)


def test_docx_that_is_not_a_zip_is_a_clear_error():
    """Bytes that are not a zip archive are reported as not a DOCX."""
    with pytest.raises(ExtractionError, match="not a zip archive"):
        extract(b"PK\x03\x04 nope", name="x.docx", mime=DOCX_MIME)


def test_zip_without_document_part_is_not_a_docx():
    """A valid zip lacking word/document.xml is reported as not a DOCX."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hello.txt", "hi")
    with pytest.raises(ExtractionError, match="word/document.xml is missing"):
        extract(out.getvalue(), name="x.docx", mime=DOCX_MIME)


def test_docx_with_malformed_xml_is_a_clear_error():
    """A DOCX whose document part is not well-formed XML names the broken part."""
    broken = rebuild_docx(make_docx(), replace={"word/document.xml": b"<w:document><oops"})
    with pytest.raises(ExtractionError, match="word/document.xml is not well-formed"):
        extract(broken, name="x.docx", mime=DOCX_MIME)


def test_deeply_nested_json_is_a_clear_error():
    """JSON nested past the recursion limit is refused, not a crash."""
    with pytest.raises(ExtractionError, match="nested too deeply"):
        extract(b"[" * 200_000 + b"]" * 200_000, name="deep.json", mime="application/json")


def test_invalid_json_is_a_clear_error():
    """Broken JSON says where it breaks."""
    with pytest.raises(ExtractionError, match=r"not valid JSON \(Expecting"):
        extract(b'{"a": ', name="a.json", mime="application/json")


def test_csv_with_an_oversized_field_is_a_clear_error():
    """A CSV field past the csv module's field limit is an error, not a crash."""
    data = b'a,b\n"' + b"x" * 200_000 + b'",1\n'
    with pytest.raises(ExtractionError, match="not valid CSV"):
        extract(data, name="big.csv", mime="text/csv")


def test_html_with_too_many_elements_is_refused_before_trafilatura():
    """HTML past the element cap is refused while it is streamed, before any tree is built."""
    html = b"<html><body>" + b"<i>x</i>" * 2_000 + b"</body></html>"
    limits = Limits(max_xml_elements=1_000)
    with pytest.raises(ExtractionError, match=r"p\.html: too many HTML elements \(more than 1,000"):
        extract(html, name="p.html", mime="text/html", limits=limits)


def test_a_file_the_upload_limit_accepted_is_not_too_large_to_read(settings):
    """What the upload accepts, the reader reads: the reader's limit is the upload limit
    (a 20,100,000-byte file passed the 20 MiB upload and was then "too large to read")."""
    from workflows.execution.setup import tool_settings

    assert Limits().max_bytes == 20 * 1024 * 1024 == settings.POWERON_MAX_UPLOAD_BYTES
    settings.POWERON_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
    assert Limits.from_settings(tool_settings()).max_bytes == 64 * 1024 * 1024
    settings.POWERON_MAX_UPLOAD_BYTES = 1024 * 1024  # fewer uploads: fetched pages still read
    assert Limits.from_settings(tool_settings()).max_bytes == 20 * 1024 * 1024
    data = b"line of text\n" * (20_100_000 // 13)
    assert len(data) > 20_000_000
    assert extract(data, name="near_limit.txt", mime="text/plain").sections
