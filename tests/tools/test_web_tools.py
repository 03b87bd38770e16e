"""web.search, web.scrape and web.crawl end to end: MemoryStore, the local site, fake providers."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.fake_search import FakeSearxng, FakeTavily, Hit, site_hits
from workflows.engine.records.protocols import ActionContext, DocumentRef, catalog_line
from workflows.engine.testing import MemoryStore, ScriptedLLM
from workflows.tools.web.actions import WebCrawl, WebScrape, WebSearch


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def make_ctx(store, website):
    """An ActionContext whose settings allow the test site, with a provider chosen per test."""

    def build(
        provider=None,
        *,
        documents: list[DocumentRef] | None = None,
        secret=None,
        objective="",
        **settings,
    ):
        values = {"allow_hosts": [website.origin], **settings}
        if isinstance(provider, FakeTavily):
            values |= {"search_provider": "tavily", "tavily_base_url": provider.url}
        elif isinstance(provider, FakeSearxng):
            values |= {"search_provider": "searxng", "searxng_url": provider.url}
        return ActionContext(
            documents=documents or [],
            store=store,
            llm=ScriptedLLM(),
            language="en",
            connection_secret=secret,
            objective=objective,
            settings=values,
        )

    return build


async def save_all(store: MemoryStore, result) -> list[DocumentRef]:
    """Store an action's documents the way the host does."""
    return [
        await store.save(
            document, label=f"round1_task1_action1_{result.label}", round=1, task=1, action=1
        )
        for document in result.documents
    ]


def test_catalog_lines_use_the_seed_names():
    """The tiny catalog derived from the parameter models matches the seed's names."""
    assert catalog_line(WebSearch) == (
        "web.search(query,maxResults,searchDepth,timeRange,topic,includeDomains,"
        "excludeDomains,language,includeAnswer,includeRawContent)"
    )
    assert catalog_line(WebScrape) == (
        "web.scrape(query,maxResults,searchDepth,timeRange,topic,includeDomains,"
        "excludeDomains,language,includeAnswer,includeRawContent,extractDepth,format)"
    )
    assert catalog_line(WebCrawl) == "web.crawl(extractDepth,format) [reads documents]"


async def test_web_search_with_tavily_and_a_connection_secret(tavily, make_ctx, website):
    """The user's Tavily key comes from the connection; results become one JSON document."""
    ctx = make_ctx(tavily, secret="tvly-test-key", tavily_api_key="tvly-admin-key")
    params = WebSearch.Parameters(query="solar power Northern Europe", includeAnswer=True)
    result = await WebSearch().run(params, ctx)
    assert result.success, result.error
    assert tavily.keys == ["tvly-test-key"]
    [document] = result.documents
    assert document.mime == "application/json"
    data = json.loads(document.data)
    assert [row["url"] for row in data["results"]] == [
        website.page_url(path) for path in ("/a", "/b", "/c")
    ]
    assert data["provider"] == "tavily"
    top = result.findings[0]
    assert top.url == website.page_url("/a")
    assert 0 < top.relevance <= 1
    assert top.keyPoints
    assert "Northern Europe" in top.entities
    assert any("UNTRUSTED DATA" in note for note in result.notes)  # the provider's answer
    assert website.requests == []  # search alone fetches no page


async def test_web_search_with_searxng(searxng, make_ctx):
    """SearXNG results come back the same way."""
    result = await WebSearch().run(WebSearch.Parameters(query="wind"), make_ctx(searxng))
    assert result.success, result.error
    assert len(json.loads(result.documents[0].data)["results"]) == 3


async def test_web_search_without_a_provider(make_ctx):
    """No provider configured: a failed result that says so."""
    result = await WebSearch().run(WebSearch.Parameters(query="wind"), make_ctx())
    assert not result.success
    assert "No search provider" in result.error


async def test_web_scrape_fetches_extracts_and_reranks(searxng, make_ctx, website, store):
    """Top results are fetched from the site, extracted, and ordered by relevance."""
    searxng.hits = site_hits(["/b", "/c", "/a"])  # the provider ranks the best page last
    params = WebScrape.Parameters(query="solar power Northern Europe", maxResults=3)
    result = await WebScrape().run(params, make_ctx(searxng))
    assert result.success, result.error
    assert [doc.sourceUrl for doc in result.documents][0] == website.page_url("/a")
    assert all(doc.source == "fetched" and doc.mime == "text/markdown" for doc in result.documents)
    first = result.documents[0].data.decode()
    assert first.startswith("# Solar Power in Northern Europe")
    assert f"Source: <{website.page_url('/a')}>" in first
    assert "Copyright Test Site" not in first  # boilerplate removed by trafilatura
    assert [f.relevance for f in result.findings] == sorted(
        (f.relevance for f in result.findings), reverse=True
    )
    assert result.findings[0].keyPoints
    refs = await save_all(store, result)
    assert [ref.name for ref in refs][0] == "01-solar-power-in-northern-europe.md"


async def test_web_scrape_text_format_and_enrichment_off(tavily, make_ctx):
    """format=text gives plain text; with enrichment off findings carry no key points."""
    ctx = make_ctx(tavily, tavily_api_key="tvly-test-key", web_enrichment=False)
    params = WebScrape.Parameters(query="wind farms", format="text", maxResults=2)
    result = await WebScrape().run(params, ctx)
    assert result.success, result.error
    assert all(doc.mime == "text/plain" for doc in result.documents)
    assert not result.documents[0].data.startswith(b"#")
    assert all(f.keyPoints == [] and f.entities == [] for f in result.findings)


async def test_web_scrape_skips_refused_pages_with_a_note(website, make_ctx):
    """A robots-disallowed and a private result are skipped; the rest is still returned."""
    hits = [Hit("/private/secret"), Hit("http://10.0.0.1/admin"), Hit("/a")]
    with FakeTavily(website.url, hits) as provider:
        ctx = make_ctx(provider, tavily_api_key="tvly-test-key")
        result = await WebScrape().run(WebScrape.Parameters(query="solar"), ctx)
    assert result.success, result.error
    assert [doc.sourceUrl for doc in result.documents] == [website.page_url("/a")]
    assert any("robots.txt" in note for note in result.notes)
    assert any("10.0.0.1" in note and "private" in note for note in result.notes)
    assert "/private/secret" not in website.paths


async def test_web_scrape_fails_clearly_when_no_page_can_be_read(website, make_ctx):
    """When every result is refused, the action fails and says why."""
    with FakeTavily(website.url, [Hit("/image.png")]) as provider:
        ctx = make_ctx(provider, tavily_api_key="tvly-test-key")
        result = await WebScrape().run(WebScrape.Parameters(query="solar"), ctx)
    assert not result.success
    assert "image/png" in result.error


async def test_web_crawl_follows_same_site_links_from_search_results(
    searxng, make_ctx, website, store
):
    """Crawling a stored search result follows same-site links, never other sites or
    robots-disallowed paths, and stores each page as a fetched document."""
    searxng.hits = site_hits(["/"])
    searched = await WebSearch().run(WebSearch.Parameters(query="energy"), make_ctx(searxng))
    refs = await save_all(store, searched)
    result = await WebCrawl().run(
        WebCrawl.Parameters(), make_ctx(documents=refs, objective="solar power in Europe")
    )
    assert result.success, result.error
    urls = [doc.sourceUrl for doc in result.documents]
    assert urls == [website.page_url(path) for path in ("/", "/a", "/b")]  # one level
    assert "/private/secret" not in website.paths
    assert all("external.example" not in url for url in urls)
    assert any("robots.txt" in note for note in result.notes)
    assert max(result.findings, key=lambda f: f.relevance).url == website.page_url("/a")


async def test_web_crawl_depth_and_page_cap(make_ctx, website, store):
    """basic follows one level of links; the page cap holds whatever the depth."""
    ref = store.add(
        "links.txt", "text/plain", f"See {website.page_url('/b')}.".encode(), label="up"
    )
    basic = await WebCrawl().run(WebCrawl.Parameters(), make_ctx(documents=[ref]))
    assert [doc.sourceUrl for doc in basic.documents] == [
        website.page_url("/b"),
        website.page_url("/c"),
    ]
    advanced = await WebCrawl().run(
        WebCrawl.Parameters(extractDepth="advanced"), make_ctx(documents=[ref])
    )
    assert len(advanced.documents) == 3  # /b -> /c -> /a
    capped = await WebCrawl().run(
        WebCrawl.Parameters(extractDepth="advanced"), make_ctx(documents=[ref], crawl_max_pages=1)
    )
    assert len(capped.documents) == 1


async def test_web_crawl_of_a_fetched_page_uses_its_address(make_ctx, website, store):
    """A previously fetched page stands for its own URL, whatever its text says."""
    with FakeTavily(website.url) as provider:
        result = await WebScrape().run(
            WebScrape.Parameters(query="wind", maxResults=1),
            make_ctx(provider, tavily_api_key="tvly-test-key"),
        )
    assert result.success, result.error
    [ref] = await save_all(store, result)
    crawled = await WebCrawl().run(
        WebCrawl.Parameters(format="text"), make_ctx(documents=[ref], crawl_max_pages=2)
    )
    assert [doc.sourceUrl for doc in crawled.documents] == [
        ref.sourceUrl,
        website.page_url("/b"),
    ]


async def test_web_crawl_without_urls(make_ctx, store):
    """Documents without any web address give a clear failure."""
    ref = store.add("notes.txt", "text/plain", b"nothing to see", label="up")
    result = await WebCrawl().run(WebCrawl.Parameters(), make_ctx(documents=[ref]))
    assert not result.success
    assert "no web addresses" in result.error


async def test_web_crawl_refuses_private_addresses_in_documents(make_ctx, store, transport):
    """URLs written in a document are checked like any other: nothing is connected to."""
    text = b"http://169.254.169.254/latest/meta-data/ http://192.168.1.1/ file:///etc/passwd"
    ref = store.add("evil.txt", "text/plain", text, label="up")
    result = await WebCrawl(transport=transport).run(
        WebCrawl.Parameters(), make_ctx(documents=[ref])
    )
    assert not result.success
    assert "not fetched" in result.error
    assert transport.requests == []


async def test_cancelling_a_scrape_propagates(tavily, make_ctx, website):
    """Cancelling a running tool raises CancelledError; the tool does not swallow it."""
    tavily.hits = [Hit("/slow")]
    ctx = make_ctx(tavily, tavily_api_key="tvly-test-key", respect_robots=False)
    task = asyncio.ensure_future(WebScrape().run(WebScrape.Parameters(query="slow"), ctx))
    while "/slow" not in website.paths:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_scrape_refuses_a_result_whose_name_resolves_privately(
    website, make_ctx, transport, monkeypatch
):
    """A result host that DNS maps to a private address is refused before connecting
    (the system resolver is replaced, not the network)."""
    lookups = []

    async def fake_system_resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["10.1.2.3"]

    monkeypatch.setattr("workflows.tools.web.fetch.system_resolve", fake_system_resolve)
    hits = [Hit("http://intranet.corp.example/wiki"), Hit("/a")]
    with FakeTavily(website.url, hits) as provider:
        ctx = make_ctx(provider, tavily_api_key="tvly-test-key")
        result = await WebScrape(transport=transport).run(WebScrape.Parameters(query="q"), ctx)
    assert result.success, result.error
    assert lookups == ["intranet.corp.example"]
    assert any("10.1.2.3" in note for note in result.notes)
    assert all(request.headers["Host"] != "intranet.corp.example" for request in transport.requests)
    assert [doc.sourceUrl for doc in result.documents] == [website.page_url("/a")]
