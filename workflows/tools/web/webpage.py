"""Turn a fetched page into text (trafilatura for HTML), its title and its links."""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import urljoin

from workflows.tools.web.fetch import Page

Format = Literal["markdown", "text"]
Depth = Literal["basic", "advanced"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MAX_LINKS = 500


@dataclass(frozen=True)
class PageText:
    """The readable content of one page."""

    url: str
    title: str
    text: str
    """Main text, in the asked format; empty for binary documents such as PDF."""
    mime: str
    """The mime type of the document to store."""
    links: list[str] = field(default_factory=list)
    """Absolute http(s) links found on an HTML page, in order, without duplicates."""
    body: bytes = b""
    """The original bytes, kept for binary documents (PDF)."""


def extract_page(page: Page, *, fmt: Format = "markdown", depth: Depth = "basic") -> PageText:
    """Extract a page; CPU-bound, so callers run it in a thread."""
    if page.media_type in HTML_TYPES:
        return _html(page, fmt, depth)
    if page.media_type == "application/pdf":
        return PageText(page.url, _name_from_url(page.url), "", "application/pdf", body=page.body)
    text = page.text()
    if page.media_type.endswith("json"):
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        return PageText(page.url, _name_from_url(page.url), text, "application/json")
    mime = page.media_type if page.media_type.startswith("text/") else "text/plain"
    return PageText(page.url, _name_from_url(page.url), text, mime)


def _html(page: Page, fmt: Format, depth: Depth) -> PageText:
    import trafilatura  # Imported on use: it is slow to import and most runs never need it.

    html = page.text()
    scan = _LinkScanner(page.url)
    scan.feed(html)
    scan.close()
    text = trafilatura.extract(
        html,
        url=page.url,
        output_format="markdown" if fmt == "markdown" else "txt",
        include_links=False,
        include_images=False,
        include_tables=True,
        include_comments=False,
        favor_recall=depth == "advanced",
        favor_precision=depth == "basic",
    )
    if not text and depth == "basic":
        # Precision mode found nothing on some short pages; recall mode is the fallback.
        text = trafilatura.extract(
            html, url=page.url, output_format="txt", include_comments=False, favor_recall=True
        )
    title = " ".join(scan.title.split()) or _name_from_url(page.url)
    text = (text or " ".join(scan.text.split())).strip()
    if fmt == "markdown" and text and not text.startswith("# "):
        text = f"# {title}\n\n{text}"
    mime = "text/markdown" if fmt == "markdown" else "text/plain"
    return PageText(page.url, title, text, mime, links=scan.links)


class _LinkScanner(HTMLParser):
    """Collects the title, the visible text (a fallback) and the links of an HTML page."""

    def __init__(self, base: str) -> None:
        super().__init__(convert_charrefs=True)
        self.base = base
        self.title = ""
        self.text = ""
        self.links: list[str] = []
        self._seen: set[str] = set()
        self._in_title = False
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base":
            href = dict(attrs).get("href")
            if href:
                self.base = urljoin(self.base, href)
        elif tag == "a":
            self._link(dict(attrs).get("href"))
        elif tag == "title":
            self._in_title = True
        elif tag in ("script", "style", "noscript"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in ("script", "style", "noscript") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip and len(self.text) < 200_000:
            self.text += data + " "

    def _link(self, href: str | None) -> None:
        if not href or len(self.links) >= MAX_LINKS:
            return
        url = urljoin(self.base, href.strip()).split("#", 1)[0]
        if url.startswith(("http://", "https://")) and url not in self._seen:
            self._seen.add(url)
            self.links.append(url)


def _name_from_url(url: str) -> str:
    tail = re.sub(r"^https?://", "", url).rstrip("/")
    return tail[:120] or url


def slug(text: str, limit: int = 60) -> str:
    """A file-name-safe version of a title."""
    cleaned = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-_")
    return cleaned[:limit].rstrip("-") or "page"
