"""Hostile documents built on the spot: zip bombs whose headers lie, XML element bombs."""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from functools import cache

from tests.tools._documents_helpers import make_docx, rebuild_docx

_W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def _deflate_chunks(chunks: list[bytes] | None = None, *, zeros: int = 0) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    out = [packer.compress(chunk) for chunk in chunks or []]
    block = b"\0" * (1 << 20)
    for _ in range(zeros >> 20):
        out.append(packer.compress(block))
    return b"".join(out) + packer.flush()


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip archive written by hand: (name, deflated data, declared size, declared CRC)."""
    body, directory = io.BytesIO(), io.BytesIO()
    for name, packed, size, crc in members:
        encoded = name.encode()
        offset = body.tell()
        fields = (20, 0, 8, 0, 0x21, crc, len(packed), size, len(encoded))
        body.write(b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", *fields, 0) + encoded + packed)
        directory.write(
            b"PK\x01\x02"
            + struct.pack("<HHHHHHIIIHHHHHII", 20, *fields, 0, 0, 0, 0, 0, offset)
            + encoded
        )
    count, start = len(members), body.tell()
    end = struct.pack("<HHHHIIH", 0, 0, count, count, directory.tell(), start, 0)
    return body.getvalue() + directory.getvalue() + b"PK\x05\x06" + end


@cache
def lying_docx_bomb(
    part: str = "word/document.xml", *, inflated: int = 1 << 30, declared: int = 2048
) -> bytes:
    """A DOCX whose `part` declares `declared` bytes but inflates to `inflated`: its start
    is the real part, the rest zeros, and its CRC that of the declared bytes, so a reader
    that trusts the header sees a consistent member."""
    members = []
    with zipfile.ZipFile(io.BytesIO(make_docx())) as source:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == part:
                head = content.ljust(declared, b" ")[:declared]
                packed = _deflate_chunks([head], zeros=inflated)
                members.append((part, packed, declared, zlib.crc32(head)))
            else:
                members.append((info.filename, _deflate_chunks([content]), len(content), info.CRC))
    return _zip(members)


def _document(body: bytes) -> bytes:
    return (
        b'<?xml version="1.0"?><w:document ' + _W + b"><w:body>" + body + b"</w:body></w:document>"
    )


@cache
def wide_xml_docx(*, inflated: int = 95_000_000) -> bytes:
    """A DOCX whose document part is `inflated` bytes of tiny paragraphs, varied enough to
    compress far less than the zip-bomb ratio cap."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    pieces, size = [], 0
    while size < inflated:
        word = "".join(rng.choices(letters, k=3)).encode()
        piece = b"<w:p><w:r><w:t>" + word + b"</w:t></w:r></w:p>"
        pieces.append(piece)
        size += len(piece)
    return rebuild_docx(make_docx(), replace={"word/document.xml": _document(b"".join(pieces))})


def deep_xml_docx(*, depth: int = 100_000) -> bytes:
    """A DOCX whose document part nests elements `depth` levels deep (names varied, so it
    compresses less than the ratio cap)."""
    rng = random.Random(5)
    names = [("w:" + "".join(rng.choices("abcdefghijklmnop", k=6))).encode() for _ in range(depth)]
    nested = b"".join(b"<" + n + b">" for n in names) + b"".join(
        b"</" + n + b">" for n in reversed(names)
    )
    return rebuild_docx(make_docx(), replace={"word/document.xml": _document(nested)})


def huge_text_docx(*, chars: int = 40_000_000) -> bytes:
    """A DOCX with one paragraph of `chars` characters of varied text (under the ratio cap)."""
    rng = random.Random(11)
    words = [bytes(rng.choices(b"abcdefghij", k=5)) + b" " for _ in range(300)]
    text = b"".join(rng.choices(words, k=chars // 6))
    body = b"<w:p><w:r><w:t>" + text + b"</w:t></w:r></w:p>"
    return rebuild_docx(make_docx(), replace={"word/document.xml": _document(body)})
