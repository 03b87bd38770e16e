"""Web search providers: Tavily (API) and SearXNG (self-hosted JSON API).

Both are called through the safe fetcher's client. The provider URL comes from the admin's
settings, so its origin is trusted even on a private network (a self-hosted SearXNG usually
is); nothing else about the fetch rules is relaxed, and every URL a provider returns is
fetched later under the full rules.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from workflows.tools.web.fetch import FetchError, SafeFetcher
from workflows.tools.web.settings import ToolSettings


class SearchParameters(BaseModel):
    """The parameters of web.search (and the search half of web.scrape)."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=400, description="What to search the web for.")
    maxResults: int = Field(5, ge=1, le=20, description="How many results to return.")
    searchDepth: Literal["basic", "advanced"] = Field(
        "basic", description="basic for quick lookups, advanced for analysis."
    )
    timeRange: Literal["day", "week", "month", "year"] | None = Field(
        None, description="Only results this recent; only when freshness matters."
    )
    topic: Literal["general", "news", "finance"] = "general"
    includeDomains: list[str] = Field(default_factory=list, max_length=20)
    excludeDomains: list[str] = Field(default_factory=list, max_length=20)
    language: str | None = Field(None, description="Result language; the user's by default.")
    includeAnswer: bool = Field(False, description="Ask the provider for a short answer too.")
    includeRawContent: bool = Field(False, description="Include each page's full text.")


class SearchHit(BaseModel):
    """One search result."""

    url: str
    title: str = ""
    content: str = ""
    """The provider's snippet."""
    score: float | None = None
    """The provider's own relevance score, scaled to 0..1."""
    publishedDate: str | None = None
    rawContent: str | None = None


class SearchOutcome(BaseModel):
    """What a provider answered."""

    provider: Literal["tavily", "searxng"]
    query: str
    answer: str | None = None
    results: list[SearchHit] = Field(default_factory=list)


class SearchError(Exception):
    """The search could not be done; the message says why, without any secret."""


async def web_search(
    fetcher: SafeFetcher,
    settings: ToolSettings,
    params: SearchParameters,
    *,
    language: str,
    secret: str | None = None,
) -> SearchOutcome:
    """Ask the configured provider; `secret` (the user's own Tavily key) wins over settings:
    with it, Tavily is asked whatever the site's provider (it is the user's own)."""
    if secret:
        settings = settings.model_copy(update={"search_provider": "tavily"})
    elif reason := settings.provider_unavailable():
        raise SearchError(reason)
    try:
        if settings.search_provider == "tavily":
            outcome = await _tavily(fetcher, settings, params, secret)
        else:
            outcome = await _searxng(fetcher, settings, params, language)
    except FetchError as error:
        raise SearchError(f"{_provider(settings)} could not be reached: {error}") from None
    except ValueError:  # not JSON, or JSON of the wrong shape
        raise SearchError(f"{_provider(settings)} answered with something unreadable") from None
    seen: set[str] = set()
    hits = []
    for hit in outcome.results:
        if _wanted(hit.url, params) and hit.url not in seen:
            seen.add(hit.url)
            hits.append(hit)
    return outcome.model_copy(update={"results": hits[: params.maxResults]})


def _provider(settings: ToolSettings) -> str:
    """The provider and the setting that points at it, for error messages."""
    if settings.search_provider == "tavily":
        return f"Tavily at {settings.tavily_base_url} (POWERON_TAVILY_URL)"
    return f"SearXNG at {settings.searxng_url} (POWERON_SEARXNG_URL)"


async def _tavily(
    fetcher: SafeFetcher, settings: ToolSettings, params: SearchParameters, secret: str | None
) -> SearchOutcome:
    key = secret or (settings.tavily_api_key.get_secret_value() if settings.tavily_api_key else "")
    if not key:
        raise SearchError(
            "Tavily needs an API key: add your own Tavily key under Connections, "
            "or ask an admin to set POWERON_TAVILY_API_KEY."
        )
    body: dict[str, Any] = {
        "api_key": key,
        "query": params.query,
        "max_results": params.maxResults,
        "search_depth": params.searchDepth,
        "topic": params.topic,
        "include_answer": params.includeAnswer,
        "include_raw_content": params.includeRawContent,
        "include_domains": params.includeDomains,
        "exclude_domains": params.excludeDomains,
    }
    if params.timeRange:
        body["time_range"] = params.timeRange
    try:
        page = await fetcher.call_api(
            "POST",
            f"{settings.tavily_base_url}/search",
            json=body,
            headers={"Authorization": f"Bearer {key}"},
        )
    except FetchError as error:
        if error.status in (401, 403):
            raise SearchError(
                "Tavily refused the API key: check your Tavily connection or "
                "POWERON_TAVILY_API_KEY (and the plan)"
            ) from None
        if error.status == 429:
            raise SearchError("Tavily's rate limit is reached; try again later") from None
        raise
    data = _object(page.json())
    return SearchOutcome(
        provider="tavily",
        query=params.query,
        answer=_text(data.get("answer")) or None,
        results=[
            SearchHit(
                url=_text(item.get("url")),
                title=_text(item.get("title")),
                content=_text(item.get("content")),
                score=_score(item.get("score")),
                publishedDate=_text(item.get("published_date")) or None,
                rawContent=_text(item.get("raw_content")) or None,
            )
            for item in _items(data.get("results"))
        ],
    )


async def _searxng(
    fetcher: SafeFetcher, settings: ToolSettings, params: SearchParameters, language: str
) -> SearchOutcome:
    query: dict[str, str] = {
        "q": params.query,
        "format": "json",
        "language": params.language or language,
        "categories": "news" if params.topic == "news" else "general",
        "safesearch": "1",
    }
    if params.timeRange:
        query["time_range"] = params.timeRange
    page = await fetcher.call_api("GET", f"{settings.searxng_url}/search?{urlencode(query)}")
    data = _object(page.json())
    items = _items(data.get("results"))
    # SearXNG scores are unbounded sums over engines; scale them to 0..1.
    top = max((_score(item.get("score"), clamp=False) or 0.0 for item in items), default=0.0)
    answers = [
        _text(answer.get("answer") if isinstance(answer, dict) else answer)
        for answer in data.get("answers") or []
    ]
    return SearchOutcome(
        provider="searxng",
        query=params.query,
        answer=(answers[0] or None) if params.includeAnswer and answers else None,
        results=[
            SearchHit(
                url=_text(item.get("url")),
                title=_text(item.get("title")),
                content=_text(item.get("content")),
                score=round((_score(item.get("score"), clamp=False) or 0.0) / top, 3)
                if top
                else None,
                publishedDate=_text(item.get("publishedDate")) or None,
            )
            for item in items
        ],
    )


def _wanted(url: str, params: SearchParameters) -> bool:
    """Drop non-web URLs and apply the domain filters (the provider may ignore them)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    host = parts.hostname.lower()

    def under(domains: list[str]) -> bool:
        names = (d.lower().strip().removeprefix("www.").strip(".") for d in domains)
        return any(host == name or host.endswith(f".{name}") for name in names if name)

    if params.includeDomains and not under(params.includeDomains):
        return False
    return not (params.excludeDomains and under(params.excludeDomains))


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SearchError("The search provider answered with something that is not a result list")
    return value


def _items(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _score(value: Any, *, clamp: bool = True) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return min(max(float(value), 0.0), 1.0) if clamp else float(value)
