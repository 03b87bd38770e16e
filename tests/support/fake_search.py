"""Fake Tavily and SearXNG endpoints on 127.0.0.1, answering with pages of the test site.

Both record what they received (`requests`, `queries`), so tests can check the parameters
and the API key a tool sent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from .website import ARTICLES, LocalServer, send


@dataclass
class Hit:
    """One result the fake provider returns: a path of the test site (or a full URL)."""

    path: str
    title: str = ""
    content: str = ""
    score: float = 0.5


def site_hits(paths: Sequence[str] = ("/a", "/b", "/c")) -> list[Hit]:
    """Hits for articles of the test site, titled and summarised like a search engine would."""
    hits = []
    for rank, path in enumerate(paths):
        title, text = ARTICLES.get(path, (path, ""))
        hits.append(Hit(path, title, text.split(". ")[0] + ".", round(0.9 - rank * 0.1, 2)))
    return hits


class _FakeProvider(LocalServer):
    def __init__(self, site_url: str, hits: list[Hit] | None = None) -> None:
        super().__init__()
        self.site_url = site_url
        self.hits = hits if hits is not None else site_hits()
        self.queries: list[dict[str, object]] = []
        """The parsed parameters of every search request, in order."""

    def _absolute(self, path: str) -> str:
        return path if "://" in path else f"{self.site_url}{path}"


class FakeTavily(_FakeProvider):
    """POST /search with a JSON body, like api.tavily.com; checks the api key."""

    def __init__(
        self, site_url: str, hits: list[Hit] | None = None, *, api_key: str = "tvly-test-key"
    ) -> None:
        super().__init__(site_url, hits)
        self.api_key = api_key
        self.keys: list[str | None] = []
        """The key each request carried (body api_key, else the bearer token)."""

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        if method != "POST" or urlsplit(handler.path).path != "/search":
            send(handler, 404, b'{"detail": "not found"}', "application/json")
            return
        payload = json.loads(body or b"{}")
        bearer = handler.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        key = payload.get("api_key") or bearer or None
        self.keys.append(key)
        self.queries.append(payload)
        if key != self.api_key:
            send(handler, 401, b'{"detail": {"error": "Unauthorized"}}', "application/json")
            return
        limit = int(payload.get("max_results", 5))
        results = [
            {
                "url": self._absolute(hit.path),
                "title": hit.title,
                "content": hit.content,
                "score": hit.score,
                "raw_content": hit.content if payload.get("include_raw_content") else None,
            }
            for hit in self.hits[:limit]
        ]
        answer = "Solar and wind power grew in 2023." if payload.get("include_answer") else None
        reply = {"query": payload.get("query"), "answer": answer, "results": results}
        send(handler, 200, json.dumps(reply).encode(), "application/json")


class FakeSearxng(_FakeProvider):
    """GET /search?format=json&q=..., like a self-hosted SearXNG."""

    def handle(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        parts = urlsplit(handler.path)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        if parts.path != "/search" or method != "GET":
            send(handler, 404, b"not found", "text/plain")
            return
        self.queries.append(query)
        if query.get("format") != "json":
            send(handler, 403, b"format not enabled", "text/plain")
            return
        results = [
            {
                "url": self._absolute(hit.path),
                "title": hit.title,
                "content": hit.content,
                "engine": "fake",
                "score": hit.score * 2,
            }
            for hit in self.hits
        ]
        reply = {"query": query.get("q"), "results": results, "answers": []}
        send(handler, 200, json.dumps(reply).encode(), "application/json")
