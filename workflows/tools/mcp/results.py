"""An MCP tool's result as documents and notes, bounded like uploads.

Text becomes Markdown and structured content JSON, both cut at the server's
`max_output_chars`; embedded resources, images and audio become files. A server may send
anything, so each file is measured before it is decoded: one larger than `document_bytes`
(an upload's limit), or past `result_bytes` for the whole result, or beyond `documents` files
in one call, is left out, and the observation's notes say what was left out and why. Every
document loses the server's credentials; its media type is checked where it is stored.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from workflows.engine.records.protocols import ActionResult, ProducedDocument
from workflows.tools.mcp.servers import McpServer, redact, redact_bytes

MB = 1024 * 1024


def filesizeformat(size: int) -> str:
    """A size for people: 512 bytes, 20.0 MB."""
    if size < 1024:
        return f"{size} bytes"
    if size < MB:
        return f"{size / 1024:.1f} KB"
    return f"{size / MB:.1f} MB"


@dataclass(frozen=True)
class ResultLimits:
    """What one tool call may bring back (POWERON_MAX_UPLOAD_BYTES,
    POWERON_MCP_MAX_RESULT_BYTES, POWERON_MCP_MAX_DOCUMENTS)."""

    document_bytes: int = 20 * MB
    """One file (an image, a resource): as an upload may be."""
    result_bytes: int = 20 * MB
    """Every file of one result together."""
    documents: int = 10
    """Files per call (its text and structured content come on top)."""

    @property
    def response_bytes(self) -> int:
        """The most an HTTP server's response may carry: the files in base64 (4/3 of their
        bytes), the text and the JSON around them."""
        return self.result_bytes * 4 // 3 + 4 * MB


class _Files:
    """The files of one result, kept while they fit, and what was left out."""

    def __init__(self, server: McpServer, limits: ResultLimits) -> None:
        self.server = server
        self.limits = limits
        self.documents: list[ProducedDocument] = []
        self.total = 0
        self.too_large: list[str] = []
        self.over_total: list[str] = []
        self.beyond_count = 0

    def room(self, name: str, size: int) -> bool:
        """Whether a file of `size` bytes fits; noted when it does not."""
        if len(self.documents) >= self.limits.documents:
            self.beyond_count += 1
        elif size > self.limits.document_bytes:
            self.too_large.append(f"{name} ({filesizeformat(size)})")
        elif self.total + size > self.limits.result_bytes:
            self.over_total.append(name)
        else:
            return True
        return False

    def add(self, name: str, mime: str, data: bytes) -> None:
        self.total += len(data)
        self.documents.append(ProducedDocument(name=name[:120], mime=mime, data=data))

    def notes(self) -> list[str]:
        """What the observation says of what was left out."""
        limits, notes = self.limits, []
        if self.too_large:
            notes.append(
                f"Left out, larger than {filesizeformat(limits.document_bytes)} a file may be: "
                + ", ".join(self.too_large[:5])
                + (f" and {len(self.too_large) - 5} more" if len(self.too_large) > 5 else "")
                + "."
            )
        if self.over_total:
            notes.append(
                f"Left out, past {filesizeformat(limits.result_bytes)} for the whole result: "
                f"{len(self.over_total)} file{'s' if len(self.over_total) != 1 else ''}."
            )
        if self.beyond_count:
            notes.append(
                f"{self.beyond_count} more file{'s were' if self.beyond_count != 1 else ' was'} "
                f"left out: one call keeps at most {limits.documents}."
            )
        return notes


def decoded_size(encoded: str) -> int:
    """The bytes a base64 text decodes to, without decoding it."""
    return len(encoded) * 3 // 4


def result_of(
    server: McpServer, tool: str, base: str, result: Any, limits: ResultLimits
) -> ActionResult:
    """A tool's result as documents and notes (named from `base`): text as Markdown,
    structured content as JSON, embedded resources and images as files, within `limits`; a
    server-reported error as a failure."""
    cap = server.max_output_chars
    texts: list[str] = []
    files = _Files(server, limits)
    notes: list[str] = []
    for position, block in enumerate(result.content or [], start=1):
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            mime = block.mime_type or "application/octet-stream"
            name = f"{base}_{position}.{mime.split('/')[-1][:8]}"
            if files.room(name, decoded_size(block.data)):
                files.add(name, mime, _decoded(server, block.data))
        elif kind == "resource":
            resource = block.resource
            name = Path(urlsplit(redact(server, str(resource.uri))).path).name
            name = name or f"{base}_{position}"
            text = getattr(resource, "text", None)
            size = len(text.encode()) if text is not None else decoded_size(resource.blob)
            if files.room(name, size):
                data = (
                    redact(server, text).encode()
                    if text is not None
                    else _decoded(server, resource.blob)
                )
                files.add(name, resource.mime_type or "application/octet-stream", data)
        elif kind == "resource_link":
            notes.append(redact(server, f"Linked resource: {block.uri}"))
    notes = notes[:20]  # a link per block would be a note per block
    text = redact(server, "\n\n".join(texts))
    if len(text) > cap:
        notes.append(f"The result was cut to {cap:,} characters (it had {len(text):,}).")
        text = text[:cap]
    if result.is_error:
        return ActionResult(
            success=False,
            error=f"{server.name}.{tool} reported an error: {' '.join(text.split())[:500]}",
        )
    documents = files.documents
    notes += files.notes()
    if text:
        documents.insert(
            0, ProducedDocument(name=f"{base}.md", mime="text/markdown", data=text.encode())
        )
    if result.structured_content is not None:
        content = redact_values(server, result.structured_content)
        structured = json.dumps(content, indent=2, ensure_ascii=False)
        documents.append(
            ProducedDocument(
                name=f"{base}.json", mime="application/json", data=structured[:cap].encode()
            )
        )
    if not documents:
        notes.append(f"{server.name}.{tool} returned nothing.")
    return ActionResult(success=True, documents=documents, label=base[:40], notes=notes)


def _decoded(server: McpServer, encoded: str) -> bytes:
    """A file's bytes from base64, without the server's credentials (b"" when not base64)."""
    try:
        return redact_bytes(server, base64.b64decode(encoded))
    except (binascii.Error, ValueError):
        return b""


def redact_values(server: McpServer, value: Any) -> Any:
    """Structured content without the server's credentials, in its keys and strings."""
    if isinstance(value, str):
        return redact(server, value)
    if isinstance(value, dict):
        return {redact(server, str(k)): redact_values(server, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_values(server, item) for item in value]
    return value
