"""Fake tools for the engine's tests and the benchmarks: the six actions of the catalog with the
real tools' names and parameter models, each doing something small and deterministic.

The parameter models are the real ones (`workflows.tools`), so a fake validates, fills its
defaults and refuses unknown fields exactly as its tool does;
tests/tools/test_fake_tools.py fails when a fake's parameters drift from its tool's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    ProducedDocument,
    Tool,
    ToolBase,
    WebFinding,
)
from workflows.tools import CATALOG
from workflows.tools.documents.report import file_stem

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
    name = f"{file_stem(params.title)}.md" if params.title else "report.md"  # as the real one
    doc = ProducedDocument(name=name, mime="text/markdown", data=body.encode())
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


FAKES: tuple[tuple[str, str, Behaviour], ...] = (
    ("web.search", "Search the web.", _search),
    ("web.scrape", "Search and read pages.", _scrape),
    ("web.crawl", "Read the listed URLs.", _crawl),
    ("ai.process", "Process documents.", _process),
    ("document.extract", "Extract text.", _extract),
    ("document.generateReport", "Write a report.", _report),
)
"""Each fake action: its tool's name, a short description and what it does."""


def real_tool(name: str) -> Tool:
    """The catalog's tool of that name, as the registry builds it."""
    return next(tool for tool in (tool_class() for tool_class in CATALOG) if tool.name == name)


def fake_tools() -> list[FakeTool]:
    """The six actions of the catalog, with their tools' parameter models and whether they
    read documents, each doing something small and deterministic."""
    tools = []
    for name, description, behaviour in FAKES:
        real = real_tool(name)
        tools.append(FakeTool(name, description, real.Parameters, real.uses_documents, behaviour))
    return tools


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
