"""Search providers against the fake Tavily and SearXNG, and the enrichment helpers."""

from __future__ import annotations

import pytest

from tests.support.fake_search import FakeTavily, Hit
from workflows.tools.web import enrich
from workflows.tools.web.fetch import SafeFetcher
from workflows.tools.web.search import SearchError, SearchParameters, web_search
from workflows.tools.web.settings import ToolSettings


def tavily_settings(provider, **extra) -> ToolSettings:
    return ToolSettings.load(
        {"search_provider": "tavily", "tavily_base_url": provider.url, **extra}
    )


async def search(settings, secret=None, **params):
    async with SafeFetcher(settings) as fetcher:
        return await web_search(
            fetcher, settings, SearchParameters(**params), language="de", secret=secret
        )


async def test_tavily_with_the_settings_key(tavily, website):
    """Tavily is called with the admin's key; results point at the test site."""
    outcome = await search(
        tavily_settings(tavily, tavily_api_key="tvly-test-key"),
        query="solar power",
        maxResults=2,
        searchDepth="advanced",
        timeRange="month",
        includeAnswer=True,
    )
    assert [hit.url for hit in outcome.results] == [
        website.page_url("/a"),
        website.page_url("/b"),
    ]
    assert outcome.answer
    [sent] = tavily.queries
    assert sent["max_results"] == 2
    assert sent["search_depth"] == "advanced"
    assert sent["time_range"] == "month"
    assert tavily.requests[0].headers["Authorization"] == "Bearer tvly-test-key"


async def test_the_users_connection_key_wins(tavily):
    """A key from the user's own Connection is used instead of the settings key."""
    tavily.api_key = "tvly-users-own"
    settings = tavily_settings(tavily, tavily_api_key="tvly-admin-key")
    outcome = await search(settings, secret="tvly-users-own", query="wind")
    assert outcome.results
    assert tavily.keys == ["tvly-users-own"]


async def test_the_users_own_key_works_without_a_site_provider(tavily):
    """A user's own Tavily key is used even when the site set no search provider (the tools
    were listed for them, then every call said no provider was configured)."""
    tavily.api_key = "tvly-users-own"
    settings = ToolSettings.load({"tavily_base_url": tavily.url})
    assert settings.search_provider is None
    outcome = await search(settings, secret="tvly-users-own", query="wind")
    assert outcome.results and tavily.keys == ["tvly-users-own"]


async def test_tavily_without_any_key(tavily):
    """No key anywhere: a clear error, and Tavily is not even called."""
    with pytest.raises(SearchError, match="needs an API key"):
        await search(tavily_settings(tavily), query="wind")
    assert tavily.requests == []


async def test_tavily_refuses_a_wrong_key_without_echoing_it(tavily):
    """A rejected key gives a clear message that does not contain the key."""
    with pytest.raises(SearchError, match="refused the API key") as failure:
        await search(tavily_settings(tavily, tavily_api_key="tvly-wrong-key"), query="wind")
    assert "tvly-wrong-key" not in str(failure.value)


async def test_searxng(searxng, website):
    """SearXNG is asked for JSON with the language; its scores are scaled to 0..1."""
    settings = ToolSettings.load({"search_provider": "searxng", "searxng_url": searxng.url})
    outcome = await search(settings, query="battery storage", timeRange="year", topic="news")
    assert outcome.provider == "searxng"
    assert [hit.url for hit in outcome.results][0] == website.page_url("/a")
    assert outcome.results[0].score == 1.0
    [sent] = searxng.queries
    assert sent == {
        "q": "battery storage",
        "format": "json",
        "language": "de",
        "categories": "news",
        "safesearch": "1",
        "time_range": "year",
    }


async def test_domain_filters_are_applied_to_the_results(website):
    """Include/exclude domains hold even when the provider ignores them."""
    hits = [Hit("https://docs.example.org/x"), Hit("https://news.example.com/y"), Hit("/a")]
    with FakeTavily(website.url, hits) as provider:
        settings = tavily_settings(provider, tavily_api_key="tvly-test-key")
        kept = await search(settings, query="q", includeDomains=["example.org", "example.com"])
        dropped = await search(settings, query="q", excludeDomains=["www.example.com"])
    assert [hit.url for hit in kept.results] == [
        "https://docs.example.org/x",
        "https://news.example.com/y",
    ]
    assert "https://news.example.com/y" not in [hit.url for hit in dropped.results]


async def test_no_provider_configured():
    """Without a provider, search says what to configure."""
    with pytest.raises(SearchError, match="No search provider is configured"):
        await search(ToolSettings(), query="q")


async def test_unreachable_provider():
    """A provider that is down gives a clear error."""
    settings = ToolSettings.load(
        {"search_provider": "searxng", "searxng_url": "http://127.0.0.1:9"}
    )
    with pytest.raises(SearchError, match="could not be reached"):
        await search(settings, query="q")


def test_settings_defaults_and_parsing():
    """Defaults follow the issue; comma-separated strings are accepted for lists."""
    settings = ToolSettings.load({"allow_hosts": "127.0.0.1:8000, Example.org:443"})
    assert settings.fetch_max_bytes == 5 * 1024 * 1024
    assert settings.fetch_timeout == 10
    assert settings.fetch_max_redirects == 3
    assert settings.allow_hosts == ("127.0.0.1:8000", "example.org:443")
    assert "application/pdf" in settings.fetch_content_types
    assert settings.user_agent.startswith("PowerOnBot/0.1")
    assert "secret" not in repr(ToolSettings.load({"tavily_api_key": "secret"}))


def test_relevance_prefers_pages_about_the_query():
    """Query-term overlap ranks an on-topic page above an off-topic one."""
    on = enrich.relevance("solar power Europe", "Solar in Europe", "Solar power grows.")
    off = enrich.relevance("solar power Europe", "Cooking", "Pasta needs salt.")
    assert 0 <= off < on <= 1


def test_key_points_and_entities():
    """Key points are the sentences about the query; entities are names and numbers."""
    text = (
        "The weather was pleasant all week long in town. "
        "Solar power output in Northern Europe rose by 40 percent. "
        "The Baltic Energy Agency confirmed the solar figures in 2023."
    )
    assert enrich.key_points(text, "solar power", limit=2) == [
        "Solar power output in Northern Europe rose by 40 percent.",
        "The Baltic Energy Agency confirmed the solar figures in 2023.",
    ]
    assert enrich.entities(text) == [
        "Northern Europe",
        "40 percent",
        "Baltic Energy Agency",
        "2023",
    ]
