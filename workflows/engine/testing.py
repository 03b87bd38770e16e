"""Test doubles that satisfy the engine's protocols: a scripted model and an in-memory store.

Shipped with the engine (not only the tests) so benchmarks and the demo can use them.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError

from workflows.engine.model.formats import ASKED, split_answer
from workflows.engine.model.jsonstream import FieldStream, TailStream
from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    AnswerSink,
    Completion,
    DocumentRef,
    InvalidModelOutput,
    Message,
    ProducedDocument,
    T,
    TextCompletion,
    Tool,
    ToolBase,
    Usage,
    WebFinding,
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


# --- A tool executor with fake tools that mirror the real catalog -----------------------------


class WebSearchParameters(BaseModel):
    """web.search, as the real tool declares it."""

    query: str
    maxResults: int = 5
    searchDepth: Literal["basic", "advanced"] | None = None
    timeRange: Literal["day", "week", "month", "year"] | None = None
    topic: str | None = None
    includeDomains: list[str] | None = None
    excludeDomains: list[str] | None = None
    language: str | None = None
    includeAnswer: bool = False
    includeRawContent: bool = False


class WebScrapeParameters(WebSearchParameters):
    """web.scrape: search, then fetch and extract the pages."""

    extractDepth: Literal["basic", "advanced"] | None = None
    format: Literal["markdown", "text"] | None = None


class WebCrawlParameters(BaseModel):
    """web.crawl: fetch the URLs listed in the input documents."""

    extractDepth: Literal["basic", "advanced"] | None = None
    format: Literal["markdown", "text"] | None = None


class AiProcessParameters(BaseModel):
    """ai.process: let the model work on documents."""

    aiPrompt: str
    processingMode: str | None = None
    includeMetadata: bool = False
    customInstructions: str | None = None
    expectedDocumentFormats: list[str] | None = None


class DocumentExtractParameters(BaseModel):
    """document.extract: the text of the input documents."""

    aiPrompt: str | None = None


class GenerateReportParameters(BaseModel):
    """document.generateReport: a report from the input documents (as the real tool: its
    title defaults to the objective)."""

    title: str | None = None


Behaviour = Callable[[Any, ActionContext], Awaitable[ActionResult]]


async def _text_of(ctx: ActionContext) -> list[tuple[str, str]]:
    return [
        (ref.name, (await ctx.store.read(ref)).decode("utf-8", "replace")) for ref in ctx.documents
    ]


async def _search(params: Any, ctx: ActionContext) -> ActionResult:
    findings = [
        WebFinding(
            url=f"https://example.test/{n}",
            title=f"Result {n} for {params.query}",
            relevance=1 - n / 10,
            keyPoints=[f"Key point {n} about {params.query}."],
            entities=["Example"],
        )
        for n in range(1, 4)
    ]
    body = json.dumps([f.model_dump() for f in findings]).encode()
    doc = ProducedDocument(name="search_results.json", mime="application/json", data=body)
    return ActionResult(
        success=True, documents=[doc], label="search", findings=findings, notes=["3 results"]
    )


async def _scrape(params: Any, ctx: ActionContext) -> ActionResult:
    text = f"# {params.query}\n\nThe scraped page says something useful about {params.query}."
    doc = ProducedDocument(
        name="page.md",
        mime="text/markdown",
        data=text.encode(),
        source="fetched",
        sourceUrl="https://example.test/page",
    )
    return ActionResult(success=True, documents=[doc], label="pages")


async def _crawl(params: Any, ctx: ActionContext) -> ActionResult:
    docs = [
        ProducedDocument(name=f"crawl_{name}", mime="text/markdown", data=text.encode())
        for name, text in await _text_of(ctx)
    ]
    return ActionResult(success=True, documents=docs, label="crawl")


async def _process(params: Any, ctx: ActionContext) -> ActionResult:
    texts = await _text_of(ctx)
    body = f"# {params.aiPrompt}\n\n" + "\n\n".join(text for _, text in texts)
    doc = ProducedDocument(name="processed.md", mime="text/markdown", data=body.encode())
    return ActionResult(success=True, documents=[doc], label="processed")


async def _extract(params: Any, ctx: ActionContext) -> ActionResult:
    texts = await _text_of(ctx)
    if not texts:
        return ActionResult(success=False, error="no input documents")
    docs = [
        ProducedDocument(name=f"extract_{name}.md", mime="text/markdown", data=text.encode())
        for name, text in texts
    ]
    return ActionResult(
        success=True, documents=docs, label="extract", notes=[f"{len(docs)} document(s) read"]
    )


async def _report(params: Any, ctx: ActionContext) -> ActionResult:
    texts = await _text_of(ctx)
    title = params.title or ctx.objective or "Report"
    body = f"# {title}\n\n" + "\n\n".join(f"## {n}\n\n{t}" for n, t in texts)
    doc = ProducedDocument(name="report.md", mime="text/markdown", data=body.encode())
    return ActionResult(success=True, documents=[doc], label="report")


@dataclass
class FakeTool(ToolBase):
    """One catalog entry with a scripted behaviour."""

    name: str
    description: str
    Parameters: type[BaseModel]
    uses_documents: bool
    behaviour: Behaviour
    connection_kind: str | None = None

    async def run(self, params: Any, ctx: ActionContext) -> ActionResult:
        """Run the behaviour."""
        return await self.behaviour(params, ctx)


def fake_tools() -> list[FakeTool]:
    """The six actions of the catalog, each doing something small and deterministic."""
    return [
        FakeTool("web.search", "Search the web.", WebSearchParameters, False, _search),
        FakeTool("web.scrape", "Search and read pages.", WebScrapeParameters, False, _scrape),
        FakeTool("web.crawl", "Read the listed URLs.", WebCrawlParameters, True, _crawl),
        FakeTool("ai.process", "Process documents.", AiProcessParameters, True, _process),
        FakeTool("document.extract", "Extract text.", DocumentExtractParameters, True, _extract),
        FakeTool(
            "document.generateReport", "Write a report.", GenerateReportParameters, True, _report
        ),
    ]


@dataclass
class ExecutedCall:
    """One action the executor ran."""

    name: str
    params: BaseModel
    ctx: ActionContext


class FakeToolExecutor:
    """A ToolExecutor over fake tools; `behaviours` replace a tool's behaviour by name."""

    def __init__(
        self,
        behaviours: dict[str, Behaviour] | None = None,
        *,
        tools: Sequence[FakeTool] | None = None,
    ) -> None:
        self._tools = list(tools if tools is not None else fake_tools())
        for tool in self._tools:
            if behaviours and tool.name in behaviours:
                tool.behaviour = behaviours[tool.name]
        self.calls: list[ExecutedCall] = []

    def unavailable(self) -> dict[str, str]:
        """Nothing is missing from the fake catalog (subclasses say what is)."""
        return {}

    def tools(self) -> Sequence[Tool]:
        """Every fake tool, in catalog order."""
        # Instance attributes stand in for the protocol's class variables.
        return cast(Sequence[Tool], self._tools)

    async def execute(self, name: str, params: BaseModel, ctx: ActionContext) -> ActionResult:
        """Run the named tool and record the call."""
        self.calls.append(ExecutedCall(name, params, ctx))
        tool = next(tool for tool in self._tools if tool.name == name)
        return await tool.run(params, ctx)
