"""Large catalogs for Stage 1: the built-in actions always, external tools ranked for the task.

A catalog of hundreds of tools would make every call that chooses actions pay for all of them.
Above `Ranking.threshold` tools, Stage 1 sees the built-in actions, the external tools whose
name and description share the most words with the task (a BM25 score: no embeddings, no
network), and one pseudo-action, `catalog.search`, saying how many tools are not listed. The
model chooses it with the words to look for as its objective; the engine answers with the
best matches (or every hidden name when nothing matches) and asks again. Pure Python.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    Tool,
    ToolBase,
    catalog_line,
    untrusted,
)

SEARCH_ACTION = "catalog.search"

_WORD = re.compile(r"[^\W\d_]+|\d+")  # letters of any script, or digits
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_STOP_WORDS = """a an and are as at be by do for from give given in into is it its my of on one
or our that the their them then this to up with your you what which when how all any each"""
_STOP = frozenset(_STOP_WORDS.split())
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "es", "ed", "e", "s")


@dataclass(frozen=True)
class Ranking:
    """When and how far the catalog is cut."""

    threshold: int = 24
    """Catalogs of at most this many tools are shown whole."""
    cached_threshold: int = 150
    """The same for a provider with a prompt cache: a whole catalog is the same for every
    task, so it stays in the cache across runs at a tenth of the price, while a listing cut
    for the task changes with every request and is paid in full each time."""
    top: int = 12
    """External tools listed when the catalog is cut."""
    found: int = 12
    """Tools a search answers with."""
    searches: int = 2
    """Searches one selection may make before it must choose."""
    names: int = 150
    """Hidden tools named when a search matches nothing (the rest counted)."""


DEFAULT = Ranking()
"""The ranking the engine uses (a benchmark may swap it for one that never cuts)."""


def stem(word: str) -> str:
    """A word's crude stem, the same on both sides of a match: "invoice(s)" → "invoic"."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The words of a text, split at camelCase, dots and underscores, stemmed, no stop words."""
    words = _WORD.findall(_CAMEL.sub(" ", text))
    return [stem(w) for w in (word.lower() for word in words) if w not in _STOP and len(w) > 1]


def is_external(tool: Tool) -> bool:
    """A tool from another source (an MCP server): it carries its source's own summary."""
    return tool.untrusted_summary is not None


def tool_text(tool: Tool) -> str:
    """What a tool is matched on: its name (twice: it says most), description and parameters."""
    params = " ".join(tool.Parameters.model_fields)
    return f"{tool.name} {tool.name} {tool.description} {params}"


def rank(tools: Sequence[Tool], query: str) -> list[tuple[float, Tool]]:
    """The tools that share a word with `query`, best first (BM25; ties in catalog order)."""
    docs = [Counter(terms(tool_text(tool))) for tool in tools]
    wanted = set(terms(query))
    if not docs or not wanted:
        return []
    average = sum(sum(doc.values()) for doc in docs) / len(docs) or 1.0
    frequency = Counter(term for doc in docs for term in doc if term in wanted)
    scored: list[tuple[float, int, Tool]] = []
    for position, (tool, doc) in enumerate(zip(tools, docs, strict=True)):
        length = sum(doc.values())
        score = 0.0
        for term in wanted & doc.keys():
            idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = doc[term]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        if score > 0:
            scored.append((score, position, tool))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [(score, tool) for score, _, tool in scored]


class _NoParameters(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CatalogSearch(ToolBase):
    """The pseudo-action Stage 1 chooses to see tools the cut catalog does not list; the
    engine answers it and never runs it."""

    name: ClassVar[str] = SEARCH_ACTION
    description: ClassVar[str] = "Find catalog tools that are not listed."
    Parameters: ClassVar[type[BaseModel]] = _NoParameters
    uses_documents: ClassVar[bool] = False

    def __init__(self, hidden: int) -> None:
        self.hidden = hidden
        self.catalog_note = (
            f": {hidden} more external tools are not listed. To see those that fit, choose "
            f"{SEARCH_ACTION} with the words to look for as actionObjective (no documents, "
            "no parameters); the best matches come back and you choose again."
        )

    async def run(self, params: Any, ctx: ActionContext) -> ActionResult:
        return ActionResult(success=False, notes=[f"{SEARCH_ACTION} is answered by the engine."])


@dataclass(frozen=True)
class CatalogView:
    """The tools a task's catalog lists, and those it does not."""

    shown: list[Tool]
    """The listed tools in catalog order, `catalog.search` last when some are hidden."""
    hidden: list[Tool]
    """The task's tools not listed (still allowed: a selection of one is valid)."""


def task_view(
    tools: Sequence[Tool], query: str, ranking: Ranking | None = None, *, cached: bool = False
) -> CatalogView:
    """The catalog Stage 1 sees for a task described by `query` (its request, objective and
    criteria): the whole catalog when it is small (`cached`: for a provider with a prompt
    cache, up to a larger size); otherwise the built-in actions, the external tools that
    match best, in catalog order, and `catalog.search`. The same arguments always give the
    same view, so a task's prompts keep one cacheable prefix."""
    ranking = ranking or DEFAULT
    if len(tools) <= (ranking.cached_threshold if cached else ranking.threshold):
        return CatalogView(list(tools), [])
    external = [tool for tool in tools if is_external(tool)]
    best = {id(tool) for _, tool in rank(external, query)[: ranking.top]}
    shown = [tool for tool in tools if not is_external(tool) or id(tool) in best]
    hidden = [tool for tool in external if id(tool) not in best]
    if not hidden:
        return CatalogView(shown, [])
    return CatalogView([*shown, CatalogSearch(len(hidden))], hidden)


def search(view: CatalogView, words: str, ranking: Ranking | None = None) -> list[Tool]:
    """The hidden tools that best match the model's words (none when nothing matches)."""
    ranking = ranking or DEFAULT
    return [tool for _, tool in rank(view.hidden, words)[: ranking.found]]


def search_answer(view: CatalogView, words: str, found: Sequence[Tool], *, last: bool) -> str:
    """What the model reads after a search: the tools found with their summaries (fenced:
    the servers' words), or every hidden tool's name when nothing matched."""
    if found:
        head = f"Tools found for {words[:200]!r} (they may be chosen like those of the Catalog):"
        lines = [f"- {catalog_line(t)}: {t.untrusted_summary or ''}" for t in found]
    else:
        head = (
            f"No tool matches {words[:200]!r}. The tools the Catalog does not list are (names "
            "only; they may be chosen like those of the Catalog):"
        )
        cap = DEFAULT.names
        lines = [f"- {catalog_line(tool)}" for tool in view.hidden[:cap]]
        if len(view.hidden) > cap:
            lines.append(f"- … and {len(view.hidden) - cap} more; search with other words")
    rule = (
        "Choose the action now (no more searches)."
        if last
        else f"Choose the action now, or {SEARCH_ACTION} again with other words."
    )
    listing = untrusted("MCP servers", "\n".join(lines))
    return f"{head}\n{listing}\n{rule} Answer with the same JSON as before."
