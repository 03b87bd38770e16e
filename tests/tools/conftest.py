"""Fixtures of the web tools' tests: the local test site, fake search providers, and a
fetcher whose every request and name lookup is recorded."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from tests.support.fake_search import FakeSearxng, FakeTavily
from tests.support.website import TestWebsite
from workflows.tools.web.fetch import SafeFetcher
from workflows.tools.web.settings import ToolSettings


class RecordingTransport(httpx.AsyncBaseTransport):
    """The real transport, recording each request it is asked to send (connect or not)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.requests: list[httpx.Request] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class FakeResolver:
    """A resolver answering from a table, recording every lookup; unknown names fail."""

    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = table or {}
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


@pytest.fixture
def website() -> Iterator[TestWebsite]:
    """The local test site, running."""
    with TestWebsite() as site:
        yield site


@pytest.fixture
def settings_for(website: TestWebsite):
    """Build ToolSettings that allow the test site's origin, with overrides."""

    def build(**overrides: Any) -> ToolSettings:
        return ToolSettings.load({"allow_hosts": [website.origin], **overrides})

    return build


@pytest.fixture
def transport() -> RecordingTransport:
    return RecordingTransport()


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
async def fetcher(settings_for, transport, resolver) -> AsyncIterator[SafeFetcher]:
    """A fetcher allowed to reach the test site, with a recording transport and resolver."""
    async with SafeFetcher(settings_for(), transport=transport, resolver=resolver) as fetcher:
        yield fetcher


@pytest.fixture
def tavily(website: TestWebsite) -> Iterator[FakeTavily]:
    """A fake Tavily whose results point at the test site; its key is "tvly-test-key"."""
    with FakeTavily(website.url) as provider:
        yield provider


@pytest.fixture
def searxng(website: TestWebsite) -> Iterator[FakeSearxng]:
    """A fake SearXNG whose results point at the test site."""
    with FakeSearxng(website.url) as provider:
        yield provider
