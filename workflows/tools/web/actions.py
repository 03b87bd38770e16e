"""web.search, web.scrape and web.crawl: the web half of the tool catalog.

Every request goes through one SafeFetcher per run (fetch.py); search goes to the provider
the settings name (search.py); pages are extracted with trafilatura (webpage.py) and
enriched deterministically (enrich.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflows.engine.records.protocols import (
    ActionContext,
    ActionResult,
    ProducedDocument,
    ToolBase,
    WebFinding,
    untrusted,
)
from workflows.tools.web import enrich
from workflows.tools.web.crawl import crawl, fetch_pages, urls_in_documents
from workflows.tools.web.fetch import FetchError, Resolver, SafeFetcher
from workflows.tools.web.search import SearchError, SearchOutcome, SearchParameters, web_search
from workflows.tools.web.settings import ToolSettings
from workflows.tools.web.webpage import PageText, slug

Depth = Literal["basic", "advanced"]
Format = Literal["markdown", "text"]

# extractDepth -> link levels web.crawl follows beyond the referenced URLs.
CRAWL_LEVELS: dict[str, int] = {"basic": 1, "advanced": 2}
MAX_NOTES = 8


class ScrapeParameters(SearchParameters):
    """The parameters of web.scrape: the search ones, plus how to extract the pages."""

    extractDepth: Depth = Field(
        "basic", description="basic: main text only; advanced: recall more (tables, asides)."
    )
    format: Format = Field("markdown", description="markdown, or text for plain text.")


class CrawlParameters(BaseModel):
    """The parameters of web.crawl; the URLs come from the referenced documents."""

    model_config = ConfigDict(extra="forbid")

    extractDepth: Depth = Field(
        "basic", description="basic: the pages and their links; advanced: one level more."
    )
    format: Format = Field("markdown", description="markdown, or text for plain text.")


class _WebTool(ToolBase):
    """What the three web tools share: settings, the fetcher, failures as results."""

    name: ClassVar[str]
    description: ClassVar[str]
    purpose: ClassVar[str]
    """What the action is for, in a few words (a small local model's catalog shows it)."""
    Parameters: ClassVar[type[BaseModel]]
    uses_documents: ClassVar[bool] = False
    label: ClassVar[str] = "results"

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        # Tests pass a resolver and a recording transport; the registry passes nothing.
        self._resolver = resolver
        self._transport = transport

    async def run(self, params: Any, ctx: ActionContext) -> ActionResult:
        """Do the work; known failures come back as ActionResult(success=False)."""
        try:
            settings = ToolSettings.load(ctx.settings)
        except ValidationError as error:
            fields = ", ".join(str(e["loc"][0]) for e in error.errors() if e["loc"])
            return self._failure(f"The web tool settings are invalid ({fields}).")
        try:
            async with SafeFetcher(
                settings, resolver=self._resolver, transport=self._transport
            ) as fetcher:
                return await self.work(params, ctx, settings, fetcher)
        except (SearchError, FetchError) as error:
            return self._failure(str(error))

    async def work(
        self, params: Any, ctx: ActionContext, settings: ToolSettings, fetcher: SafeFetcher
    ) -> ActionResult:
        """The tool's own work, with parsed settings and an open fetcher."""
        raise NotImplementedError

    def _failure(self, error: str) -> ActionResult:
        return ActionResult(success=False, label=self.label, error=error)


class WebSearch(_WebTool):
    """web.search: ask the configured provider; results as one JSON document."""

    name = "web.search"
    purpose = "search the web for a list of results (title, URL, snippet)"
    description = (
        "Search the web and return the result list (title, URL, snippet, relevance) as a "
        "JSON document. Use web.scrape to read the pages themselves."
    )
    Parameters = SearchParameters
    connection_kind = "tavily"
    label = "search"

    async def work(
        self,
        params: SearchParameters,
        ctx: ActionContext,
        settings: ToolSettings,
        fetcher: SafeFetcher,
    ) -> ActionResult:
        outcome = await _search(params, ctx, settings, fetcher)
        findings = []
        rows = []
        for hit in outcome.results:
            text = hit.rawContent or hit.content
            score = enrich.relevance(params.query, hit.title, text, hit.score)
            findings.append(
                _finding(hit.url, hit.title, score, text, params.query, enriched=True, points=2)
            )
            rows.append({**hit.model_dump(exclude_none=True), "relevance": score})
        document = {
            "query": params.query,
            "provider": outcome.provider,
            "answer": outcome.answer,
            "results": rows,
        }
        notes = [f"{len(rows)} results from {outcome.provider} for {params.query!r}"]
        if outcome.answer:
            notes.append(untrusted(f"{outcome.provider} answer", outcome.answer[:800]))
        return ActionResult(
            success=True,
            label=self.label,
            documents=[
                ProducedDocument(
                    name="search-results.json",
                    mime="application/json",
                    data=json.dumps(document, ensure_ascii=False, indent=2).encode(),
                )
            ],
            notes=notes,
            findings=findings,
        )


class WebScrape(_WebTool):
    """web.scrape: search, fetch the top results, extract and rerank their text."""

    name = "web.scrape"
    purpose = "search the web and read the text of the top result pages"
    description = (
        "Search the web, fetch the top result pages and return each page's main text "
        "(markdown or text), most relevant first."
    )
    Parameters = ScrapeParameters
    connection_kind = "tavily"
    label = "scrape"

    async def work(
        self,
        params: ScrapeParameters,
        ctx: ActionContext,
        settings: ToolSettings,
        fetcher: SafeFetcher,
    ) -> ActionResult:
        limit = min(params.maxResults, settings.scrape_max_pages)
        search_params = SearchParameters.model_validate(
            {**params.model_dump(exclude={"extractDepth", "format"}), "maxResults": limit}
        )
        outcome = await _search(search_params, ctx, settings, fetcher)
        urls = [hit.url for hit in outcome.results]
        fetched = await fetch_pages(fetcher, urls, fmt=params.format, depth=params.extractDepth)
        provider_scores = {hit.url: hit.score for hit in outcome.results}
        scored = [
            (enrich.relevance(params.query, f.page.title, f.page.text, provider_scores[f.url]), f)
            for f in fetched
            if f.page is not None
        ]
        errors = [f.error for f in fetched if f.error]
        if not scored:
            return self._failure(
                f"None of the {len(urls)} result pages could be read. " + " ".join(errors[:3])
            )
        scored.sort(key=lambda pair: pair[0], reverse=True)
        pages = [(score, item.page) for score, item in scored if item.page]
        return _pages_result(
            self.label,
            pages,
            errors,
            query=params.query,
            fmt=params.format,
            enriched=settings.web_enrichment,
            summary=f"Read {len(pages)} of {len(urls)} result pages, most relevant first",
        )


class WebCrawl(_WebTool):
    """web.crawl: fetch the URLs in the referenced documents and their same-site links."""

    name = "web.crawl"
    purpose = "fetch the web pages whose addresses (URLs) the documents hold"
    description = (
        "Fetch the web pages the referenced documents point at (search results, pages, "
        "text with URLs) and the pages they link to on the same site; one document per page."
    )
    Parameters = CrawlParameters
    uses_documents = True
    label = "crawl"

    async def work(
        self,
        params: CrawlParameters,
        ctx: ActionContext,
        settings: ToolSettings,
        fetcher: SafeFetcher,
    ) -> ActionResult:
        if not ctx.documents:
            return self._failure("web.crawl needs documents that contain web addresses.")
        seeds = await urls_in_documents(ctx.documents, ctx.store)
        if not seeds:
            return self._failure("The referenced documents contain no web addresses to crawl.")
        levels = min(CRAWL_LEVELS[params.extractDepth], settings.crawl_max_depth)
        pages, errors = await crawl(
            fetcher,
            seeds,
            levels=levels,
            max_pages=settings.crawl_max_pages,
            fmt=params.format,
            depth=params.extractDepth,
        )
        if not pages:
            return self._failure(
                f"None of the {len(seeds)} addresses could be read. " + " ".join(errors[:3])
            )
        query = ctx.objective
        scored = [(enrich.relevance(query, p.title, p.text) if query else 0.0, p) for p in pages]
        return _pages_result(
            self.label,
            scored,
            errors,
            query=query,
            fmt=params.format,
            enriched=settings.web_enrichment,
            summary=(
                f"Read {len(pages)} pages from {len(seeds)} addresses, following same-site "
                f"links {levels} level(s) deep (at most {settings.crawl_max_pages} pages)"
            ),
        )


async def _search(
    params: SearchParameters, ctx: ActionContext, settings: ToolSettings, fetcher: SafeFetcher
) -> SearchOutcome:
    outcome = await web_search(
        fetcher, settings, params, language=ctx.language, secret=ctx.connection_secret
    )
    if not outcome.results:
        raise SearchError(
            f"The search for {params.query!r} found nothing; try other words or fewer filters."
        )
    return outcome


def _pages_result(
    label: str,
    pages: Sequence[tuple[float, PageText]],
    errors: Sequence[str],
    *,
    query: str,
    fmt: Format,
    enriched: bool,
    summary: str,
) -> ActionResult:
    """One fetched document per page, with findings and short notes on what was skipped."""
    documents = [_page_document(index, page, fmt) for index, (_, page) in enumerate(pages, 1)]
    findings = [
        _finding(page.url, page.title, score, page.text, query, enriched=enriched)
        for score, page in pages
    ]
    notes = [summary, *(f"Skipped: {error}" for error in errors)][:MAX_NOTES]
    return ActionResult(
        success=True, label=label, documents=documents, findings=findings, notes=notes
    )


def _page_document(index: int, page: PageText, fmt: Format) -> ProducedDocument:
    """A page as a document: its text under a header naming the source, or the PDF itself."""
    if page.body:
        name, data = f"{index:02d}-{slug(page.title)}.pdf", page.body
    elif page.mime == "text/markdown":
        title, _, rest = page.text.partition("\n")
        text = f"{title}\n\nSource: <{page.url}>\n{rest}\n"
        name, data = f"{index:02d}-{slug(page.title)}.md", text.encode()
    elif page.mime == "text/plain" and fmt == "text":
        text = f"{page.title}\nSource: {page.url}\n\n{page.text}\n"
        name, data = f"{index:02d}-{slug(page.title)}.txt", text.encode()
    else:
        suffix = {"application/json": "json", "text/csv": "csv"}.get(page.mime, "txt")
        name, data = f"{index:02d}-{slug(page.title)}.{suffix}", page.text.encode()
    return ProducedDocument(
        name=name, mime=page.mime, data=data, source="fetched", sourceUrl=page.url
    )


def _finding(
    url: str,
    title: str,
    score: float,
    text: str,
    query: str,
    *,
    enriched: bool,
    points: int = 3,
) -> WebFinding:
    if not enriched:
        return WebFinding(url=url, title=_plain(title), relevance=score)
    return WebFinding(
        url=url,
        title=_plain(title),
        relevance=score,
        keyPoints=[_plain(point) for point in enrich.key_points(text, query, points)],
        entities=[_plain(entity) for entity in enrich.entities(text)],
    )


def _plain(text: str) -> str:
    """Web text for the observation: one line, no fence markers of contracts.untrusted."""
    return " ".join(text.replace("<<<", "< < <").split())[:300]
