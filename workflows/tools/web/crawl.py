"""Fetching many pages: a bounded concurrent fetch, a same-site crawl, URLs from documents."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from workflows.engine.records.protocols import DocumentRef, DocumentStore
from workflows.tools.web.addresses import AddressRefused, parse_target, same_site
from workflows.tools.web.fetch import FetchError, SafeFetcher
from workflows.tools.web.webpage import Depth, Format, PageText, extract_page

CONCURRENCY = 4
MAX_SEEDS = 50
_URL = re.compile(r"https?://[^\s<>\"'`\]\[(){}|\\^]+", re.IGNORECASE)
_SKIPPED_SUFFIXES = (
    ".jpg", ".jpeg", ".png", ".gif", ".webp", ".svg", ".ico", ".css", ".js", ".zip", ".gz",
    ".tar", ".mp3", ".mp4", ".mov", ".avi", ".woff", ".woff2", ".ttf", ".exe", ".dmg", ".iso",
)  # fmt: skip


@dataclass(frozen=True)
class Fetched:
    """One URL asked for: the extracted page, or why there is none."""

    url: str
    page: PageText | None = None
    error: str = ""


async def fetch_pages(
    fetcher: SafeFetcher, urls: Sequence[str], *, fmt: Format, depth: Depth
) -> list[Fetched]:
    """Fetch and extract urls, a few at a time, in the order given."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(url: str) -> Fetched:
        async with gate:
            try:
                page = await fetcher.get(url)
            except FetchError as error:
                return Fetched(url, error=str(error))
            try:
                extracted = await asyncio.to_thread(extract_page, page, fmt=fmt, depth=depth)
            except Exception as error:  # a parser bug on one page must not sink the others
                return Fetched(url, error=f"{url}: the text could not be extracted ({error})")
            return Fetched(url, extracted)

    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(one(url)) for url in urls]
    return [task.result() for task in tasks]


async def crawl(
    fetcher: SafeFetcher,
    seeds: Sequence[str],
    *,
    levels: int,
    max_pages: int,
    fmt: Format,
    depth: Depth,
) -> tuple[list[PageText], list[str]]:
    """Fetch the seeds, then their same-site links level by level, up to max_pages pages.

    Breadth first, so every seed comes before any link. Returns the pages and the errors.
    """
    pages: list[PageText] = []
    errors: list[str] = []
    landed: set[str] = set()
    seen = {_key(url) for url in seeds}
    level = list(seeds)[:max_pages]
    for current in range(levels + 1):
        fetched = await fetch_pages(fetcher, level, fmt=fmt, depth=depth)
        for item in fetched:
            if item.error:
                errors.append(item.error)
            elif item.page and item.page.url not in landed and len(pages) < max_pages:
                landed.add(item.page.url)  # two links may redirect to one page
                pages.append(item.page)
        room = max_pages - len(pages)
        if current == levels or room <= 0:
            break
        level = []
        for item in fetched:
            for link in _site_links(item.page) if item.page else []:
                key = _key(link)
                if key not in seen and len(level) < room:
                    seen.add(key)
                    level.append(link)
        if not level:
            break
    return pages, errors


def _site_links(page: PageText) -> Iterable[str]:
    """The page's links to its own site that look like documents, not media."""
    try:
        here = parse_target(page.url)
    except AddressRefused:
        return
    for link in page.links:
        try:
            there = parse_target(link)
        except AddressRefused:
            continue
        if same_site(here, there) and not there.url.path.lower().endswith(_SKIPPED_SUFFIXES):
            yield str(there.url)


def _key(url: str) -> str:
    try:
        return str(parse_target(url).url)
    except AddressRefused:
        return url


async def urls_in_documents(refs: Sequence[DocumentRef], store: DocumentStore) -> list[str]:
    """The web addresses the referenced documents point at, in order, without duplicates.

    A fetched page stands for its own address; search results (JSON) give their result
    URLs; any other text gives the http(s) URLs written in it.
    """
    found: list[str] = []
    for ref in refs:
        if ref.source == "fetched" and ref.sourceUrl:
            found.append(ref.sourceUrl)
            continue
        data = await store.read(ref)
        text = data[:2_000_000].decode("utf-8", errors="replace")
        if ref.mime == "application/json" or ref.name.endswith(".json"):
            try:
                found.extend(_urls_in_json(json.loads(text)))
                continue
            except ValueError:
                pass
        found.extend(match.rstrip(".,;:!?") for match in _URL.findall(text))
    unique = list(
        dict.fromkeys(url for url in found if url.lower().startswith(("http://", "https://")))
    )
    return unique[:MAX_SEEDS]


def _urls_in_json(value: Any) -> list[str]:
    """Every "url" field, else every string that is a URL, depth first in document order."""
    urls: list[str] = []
    if isinstance(value, dict):
        url = value.get("url")
        if isinstance(url, str) and _URL.fullmatch(url.strip()):
            urls.append(url.strip())
        for key, item in value.items():
            if key != "url":
                urls.extend(_urls_in_json(item))
    elif isinstance(value, list):
        for item in value:
            urls.extend(_urls_in_json(item))
    elif isinstance(value, str) and _URL.fullmatch(value.strip()):
        urls.append(value.strip())
    return urls
