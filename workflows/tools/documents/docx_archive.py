"""Reading a DOCX archive without trusting it.

A zip member's header declares its sizes, but nothing makes the compressed stream honour
them: zipfile inflates all of a member's compressed bytes in one call before cutting the
result to the declared size, so a 1 MB member declaring 2 KB can take 1 GB on the way.
Here every member is inflated a chunk at a time under hard byte caps (the archive's total
and the member's own declared size), XML parts are streamed through expat under element
count and depth caps with DTDs refused, and python-docx then reads an archive repacked
from the checked bytes, never the original.
"""

from __future__ import annotations

import copy
import io
import zipfile
import zlib
from typing import Any
from xml.parsers import expat

from defusedxml.ElementTree import fromstring as defused_fromstring

from workflows.tools.documents.extracted import ExtractionError, Limits

_CHUNK = 64 * 1024
_RATIO_FLOOR = 1_000_000
"""Members smaller than this are not judged by their compression ratio."""
_MB = 1_000_000


def checked_docx(data: bytes, limits: Limits) -> bytes:
    """The DOCX repacked (uncompressed) from its members' checked bytes; ExtractionError
    for a zip bomb, a lying header, an XML bomb or anything that is not a DOCX."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise ExtractionError("not a valid DOCX file (it is not a zip archive)") from None
    with archive:
        members = [member for member in archive.infolist() if not member.is_dir()]
        _check_directory(members, limits)
        budget = _Budget(limits)
        # [Content_Types].xml first: it says which other parts are XML.
        members.sort(key=lambda member: member.filename != "[Content_Types].xml")
        parts: dict[str, bytes] = {}
        xml_types: dict[str, str] = {}
        for member in members:
            is_xml = _is_xml(member.filename, xml_types)
            parts[member.filename] = _inflate(archive, member, budget, is_xml=is_xml)
            if member.filename == "[Content_Types].xml":
                xml_types = _content_types(parts[member.filename])
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as repacked:
        for name, content in parts.items():
            repacked.writestr(name, content)
    return out.getvalue()


def _check_directory(members: list[zipfile.ZipInfo], limits: Limits) -> None:
    """What the central directory alone tells: refusals only, never a reason to trust."""
    if len(members) > limits.max_zip_entries:
        raise ExtractionError(f"the DOCX archive has too many entries ({len(members):,})")
    names = [member.filename for member in members]
    if "word/document.xml" not in names:
        raise ExtractionError("not a valid DOCX file (word/document.xml is missing)")
    if len(set(names)) != len(names):
        raise ExtractionError("the DOCX archive names a part twice")
    declared = sum(member.file_size for member in members)
    if declared > limits.max_zip_bytes:
        raise ExtractionError(
            f"the DOCX archive would expand to {declared:,} bytes "
            f"(the limit is {limits.max_zip_bytes:,})"
        )
    for member in members:
        if member.flag_bits & 0x1:
            raise ExtractionError(f"the DOCX part {member.filename} is encrypted")
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 and lzma members are inflated by zipfile in one unbounded call.
            raise ExtractionError(
                f"the DOCX part {member.filename} uses a compression DOCX never uses"
            )


class _Budget:
    """Bytes inflated and XML elements seen so far, across the whole archive."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.bytes = 0
        self.elements = 0

    def take_bytes(self, count: int) -> None:
        self.bytes += count
        if self.bytes > self.limits.max_zip_bytes:
            raise ExtractionError(
                f"the document inflates beyond {self.limits.max_zip_bytes / _MB:g} MB"
            )

    def take_element(self) -> None:
        self.elements += 1
        if self.elements > self.limits.max_xml_elements:
            raise ExtractionError(
                f"too many XML elements (more than {self.limits.max_xml_elements:,})"
            )


def _inflate(
    archive: zipfile.ZipFile, member: zipfile.ZipInfo, budget: _Budget, *, is_xml: bool
) -> bytes:
    """A member's bytes, inflated a chunk at a time and checked as they come."""
    name = member.filename
    # zipfile reads the member's raw bytes (it checks the local header); we inflate them.
    raw_info = copy.copy(member)
    raw_info.compress_type = zipfile.ZIP_STORED
    raw_info.file_size = member.compress_size
    raw_info.CRC = None  # type: ignore[assignment]  # zipfile then checks no CRC itself.
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    deflated = member.compress_type == zipfile.ZIP_DEFLATED
    checker = _XmlChecker(name, budget) if is_xml else None
    out = bytearray()
    with archive.open(raw_info) as raw:
        while not (deflated and inflater.eof) and (chunk := raw.read(_CHUNK)):
            while chunk:
                piece = inflater.decompress(chunk, _CHUNK) if deflated else chunk
                chunk = inflater.unconsumed_tail if deflated else b""
                _take(member, out, piece, budget)
                if checker is not None:
                    checker.feed(piece)
                if deflated and inflater.eof:
                    break
    if (deflated and not inflater.eof) or len(out) != member.file_size:
        raise ExtractionError(f"the DOCX part {name} is truncated or corrupt")
    if zlib.crc32(out) != member.CRC:
        raise ExtractionError(f"the DOCX part {name} is corrupt (its checksum does not match)")
    if checker is not None:
        checker.close()
    return bytes(out)


def _take(member: zipfile.ZipInfo, out: bytearray, piece: bytes, budget: _Budget) -> None:
    """Add an inflated piece, stopping as soon as a cap is exceeded."""
    budget.take_bytes(len(piece))
    size = len(out) + len(piece)
    if size > member.file_size:
        raise ExtractionError(
            f"the DOCX part {member.filename} inflates beyond the {member.file_size:,} bytes "
            "its header declares (a zip bomb)"
        )
    if size > _RATIO_FLOOR and size / max(member.compress_size, 1) > budget.limits.max_zip_ratio:
        raise ExtractionError(f"the DOCX part {member.filename} is a compression bomb")
    out += piece


class _XmlChecker:
    """Streams one XML part through expat: no DTD, bounded element count and depth."""

    def __init__(self, name: str, budget: _Budget) -> None:
        self.name = name
        self.budget = budget
        self.depth = 0
        self.parser = expat.ParserCreate()
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._doctype
        self.parser.StartElementHandler = self._start
        self.parser.EndElementHandler = self._end

    def feed(self, piece: bytes) -> None:
        self._parse(piece, final=False)

    def close(self) -> None:
        self._parse(b"", final=True)

    def _parse(self, piece: bytes, *, final: bool) -> None:
        try:
            self.parser.Parse(piece, final)
        except expat.ExpatError as error:
            raise ExtractionError(
                f"the DOCX part {self.name} is not well-formed XML ({error})"
            ) from None

    def _doctype(self, *args: Any) -> None:
        raise ExtractionError(
            f"the DOCX part {self.name} declares a DTD or entities, which DOCX never needs"
        )

    def _start(self, name: str, attributes: Any) -> None:
        self.budget.take_element()
        self.depth += 1
        if self.depth > self.budget.limits.max_xml_depth:
            raise ExtractionError(
                f"the DOCX part {self.name} nests XML elements more than "
                f"{self.budget.limits.max_xml_depth} levels deep"
            )

    def _end(self, name: str) -> None:
        self.depth -= 1


def _is_xml(name: str, xml_types: dict[str, str]) -> bool:
    """XML by its name, or by the content type [Content_Types].xml gives it."""
    if name.endswith((".xml", ".rels")):
        return True
    content_type = xml_types.get("/" + name) or xml_types.get(name.rsplit(".", 1)[-1].lower())
    return bool(content_type) and not str(content_type).startswith("image/")


def _content_types(part: bytes) -> dict[str, str]:
    """Part names (with a leading /) and extensions whose content type is XML."""
    types: dict[str, str] = {}
    for element in defused_fromstring(part, forbid_dtd=True):
        tag = element.tag.rsplit("}", 1)[-1]
        content_type = element.get("ContentType", "")
        if not content_type.endswith(("+xml", "/xml")):
            continue
        if tag == "Override" and element.get("PartName"):
            types[element.get("PartName", "")] = content_type
        elif tag == "Default" and element.get("Extension"):
            types[element.get("Extension", "").lower()] = content_type
    return types
