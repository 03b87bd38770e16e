"""Test doubles that satisfy the engine's protocols: a scripted model and an in-memory store.

Shipped with the engine (not only the tests) so benchmarks can use them. The fake tools live
with the tests (tests/support/fake_tools.py), built from the real tools' parameter models,
which the engine may not import.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from workflows.engine.model.formats import ASKED, split_answer
from workflows.engine.model.jsonstream import FieldStream, TailStream
from workflows.engine.records.protocols import (
    AnswerSink,
    Completion,
    DocumentRef,
    InvalidModelOutput,
    Message,
    ProducedDocument,
    T,
    TextCompletion,
    Usage,
    describe_error,
)

Reply = str | dict[str, Any] | BaseModel | BaseException | Callable[[Sequence[Message]], Any]


@dataclass
class ScriptedCall:
    """One call the engine made: what kind, which messages, which output type."""

    kind: str
    messages: list[Message]
    output: str | None


class ScriptedLLM:
    """Answers from a queue of replies, in order, and records every call.

    A reply is a dict or model (serialised to JSON), a string (returned as is, so invalid
    JSON can be scripted), an exception (raised), or a callable taking the messages.
    """

    label = "scripted model"

    def __init__(self, replies: Iterable[Reply] = (), *, tokens_per_char: float = 0.25) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.calls: list[ScriptedCall] = []
        self._ratio = tokens_per_char

    def add(self, *replies: Reply) -> None:
        """Append replies to the script."""
        self.replies.extend(replies)

    def assert_complete(self) -> None:
        """Fail when the script still holds replies the engine never asked for."""
        assert not self.replies, f"{len(self.replies)} scripted replies were never used"

    def _next(self, messages: Sequence[Message], kind: str, output: str | None) -> str:
        self.calls.append(ScriptedCall(kind, list(messages), output))
        if not self.replies:
            raise AssertionError(f"ScriptedLLM ran out of replies (call kind {kind!r})")
        reply = self.replies.popleft()
        if callable(reply) and not isinstance(reply, BaseModel):
            reply = reply(messages)
        if isinstance(reply, BaseException):  # CancelledError too, to test cancellation
            raise reply
        if isinstance(reply, BaseModel):
            return reply.model_dump_json(by_alias=True)
        if isinstance(reply, dict):
            return json.dumps(reply)
        return str(reply)

    def _usage(self, kind: str, messages: Sequence[Message], text: str) -> Usage:
        prompt = sum(len(m["content"]) for m in messages)
        return Usage(
            kind=kind,
            prompt_tokens=int(prompt * self._ratio),
            completion_tokens=int(len(text) * self._ratio),
        )

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        output: type[T],
        kind: str,
        key: str = "",
        on_answer: AnswerSink | None = None,
    ) -> Completion[T]:
        """Validate the next reply as `output` (with `on_answer`, the answer goes there word
        by word first, as a streamed reply's would: its `answer` field, or the text after the
        JSON when the output asks for the answer that way)."""
        text = self._next(messages, kind, output.__name__)
        usage = self._usage(kind, messages, text)
        after = ASKED.get(output) == "answer_after"
        if on_answer is not None:
            stream = TailStream() if after else FieldStream("answer")
            for word in re.findall(r"\s*\S+|\s+$", text):
                if piece := stream.feed(word):
                    await on_answer(piece)
        try:
            if after:
                return Completion(output.model_validate(split_answer(text)), usage)
            return Completion(output.model_validate_json(text), usage)
        except (ValidationError, ValueError) as error:
            raise InvalidModelOutput(describe_error(error), raw=text, usage=usage) from error

    async def complete_text(self, messages: Sequence[Message], *, kind: str) -> TextCompletion:
        """Return the next reply as text."""
        text = self._next(messages, kind, None)
        return TextCompletion(text, self._usage(kind, messages, text))

    async def stream_text(
        self, messages: Sequence[Message], *, kind: str, key: str = ""
    ) -> AsyncIterator[str | Usage]:
        """Yield the next reply word by word, then its usage."""
        text = self._next(messages, kind, None)
        for index, word in enumerate(text.split(" ")):
            yield word if index == 0 else " " + word
        yield self._usage(kind, messages, text)


@dataclass
class MemoryStore:
    """A DocumentStore held in memory."""

    documents: list[tuple[DocumentRef, bytes]] = field(default_factory=list)

    def add(self, name: str, mime: str, data: bytes, *, label: str, round: int = 1) -> DocumentRef:
        """Add an uploaded document, as the host does for a user's files."""
        ref = DocumentRef(
            id=str(len(self.documents) + 1),
            name=name,
            mime=mime,
            label=label,
            size=len(data),
            round=round,
            source="uploaded",
        )
        self.documents.append((ref, data))
        return ref

    def index(self) -> list[DocumentRef]:
        """Every document, oldest first."""
        return [ref for ref, _ in self.documents]

    async def read(self, ref: DocumentRef) -> bytes:
        """The bytes of one document."""
        for stored, data in self.documents:
            if stored.id == ref.id:
                return data
        raise KeyError(ref.id)

    async def save(
        self, document: ProducedDocument, *, label: str, round: int, task: int, action: int
    ) -> DocumentRef:
        """Store a produced document."""
        ref = DocumentRef(
            id=str(len(self.documents) + 1),
            name=document.name,
            mime=document.mime,
            label=label,
            size=len(document.data),
            round=round,
            source=document.source,
            sourceUrl=document.sourceUrl,
        )
        self.documents.append((ref, document.data))
        return ref
