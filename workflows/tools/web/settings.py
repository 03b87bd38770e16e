"""Settings of the web tools, parsed from the dict the host puts in ActionContext.settings.

The host (Django settings, a test, a benchmark) fills a flat dict; every key is optional.
Keys the web tools do not know are ignored, so the same dict can carry the settings of the
other tools too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

DEFAULT_USER_AGENT = "PowerOnBot/0.1 (+https://github.com/poweron; agent fetcher)"

DEFAULT_CONTENT_TYPES = (
    "text/html",
    "application/xhtml+xml",
    "text/plain",
    "text/markdown",
    "text/x-markdown",
    "text/csv",
    "application/json",
    "application/ld+json",
    "application/pdf",
    "application/xml",
    "text/xml",
    "application/rss+xml",
    "application/atom+xml",
)


class ToolSettings(BaseModel):
    """Limits, allow-lists and providers of web.search, web.scrape and web.crawl."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    fetch_max_bytes: int = Field(5 * 1024 * 1024, gt=0)
    """Largest body accepted, counted after decompression."""
    fetch_timeout: float = Field(10.0, gt=0)
    """Seconds one fetch may take in all: every redirect hop and the body."""
    fetch_max_redirects: int = Field(3, ge=0)
    fetch_content_types: tuple[str, ...] = DEFAULT_CONTENT_TYPES
    """Media types a fetched page may have; anything else is refused."""
    user_agent: str = DEFAULT_USER_AGENT
    respect_robots: bool = True
    allow_hosts: tuple[str, ...] = ()
    """"host:port" origins fetched even though they resolve to a non-public address."""

    search_provider: Literal["tavily", "searxng"] | None = None
    tavily_api_key: SecretStr | None = None
    """Used when the user has no Tavily connection of their own."""
    tavily_base_url: str = "https://api.tavily.com"
    searxng_url: str | None = None

    web_enrichment: bool = True
    """Add relevance, key points and entities to scraped and crawled pages."""
    scrape_max_pages: int = Field(5, ge=1, le=20)
    crawl_max_pages: int = Field(10, ge=1, le=100)
    crawl_max_depth: int = Field(2, ge=0, le=5)
    """Upper bound on the link levels web.crawl follows, whatever extractDepth asks."""

    @field_validator("allow_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.replace(",", " ").split()
        return tuple(str(item).strip().lower() for item in value or ())

    @field_validator("fetch_content_types", mode="before")
    @classmethod
    def _split_types(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.replace(",", " ").split()
        return tuple(str(item).strip().lower() for item in value or ())

    @field_validator("search_provider", mode="before")
    @classmethod
    def _blank_provider(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
        return value or None

    @field_validator("tavily_base_url", "searxng_url", mode="after")
    @classmethod
    def _strip_slash(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value

    @classmethod
    def load(cls, values: Mapping[str, Any] | None) -> ToolSettings:
        """Parse the host's settings dict; raises pydantic.ValidationError when invalid."""
        return cls.model_validate(dict(values or {}))

    def provider_unavailable(self) -> str | None:
        """Why web search cannot run with these settings, or None when it can."""
        if self.search_provider is None:
            return (
                "No search provider is configured: set POWERON_SEARCH_PROVIDER to tavily "
                "(with POWERON_TAVILY_API_KEY) or searxng (with POWERON_SEARXNG_URL)."
            )
        if self.search_provider == "searxng" and not self.searxng_url:
            return "SearXNG is selected but POWERON_SEARXNG_URL is not set."
        return None
