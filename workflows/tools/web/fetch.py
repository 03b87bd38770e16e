"""The one safe fetcher every web tool uses.

A URL a model chose may point anywhere, so before any connection the fetcher resolves the
host itself, checks every address it got (loopback, private, link-local, mapped, numeric
forms: see addresses.py) and then connects to the checked address, not to the name again,
so a second DNS answer cannot swap in another one. Redirects are followed by hand, each hop
checked the same way. Bodies are read as a stream and counted after decompression (a small
gzip body must not inflate past the cap); one overall deadline covers every hop; only
allowed content types are read; robots.txt is honoured; the User-Agent says who we are.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import urljoin
from urllib.robotparser import RobotFileParser

import httpx

from workflows.tools.web.addresses import (
    AddressRefused,
    Target,
    is_allowed,
    is_local_name,
    literal_address,
    non_public_reason,
    parse_target,
)
from workflows.tools.web.fetch_errors import (
    FetchBlocked,
    FetchDisallowed,
    FetchError,
    FetchFailed,
    FetchTimeout,
    FetchTooLarge,
    FetchUnsupported,
)
from workflows.tools.web.inflate import Inflater
from workflows.tools.web.settings import ToolSettings

Resolver = Callable[[str, int], Awaitable[list[str]]]

REDIRECTS = frozenset({301, 302, 303, 307, 308})
ROBOTS_MAX_BYTES = 512 * 1024
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    """A fetched response: final URL, status, media type and the decoded body."""

    url: str
    status: int
    media_type: str = ""
    charset: str | None = None
    body: bytes = b""
    redirects: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """The body as text, in its declared charset (UTF-8 when none or unknown)."""
        codec = "utf-8"
        declared = self.charset
        html = self.media_type in ("text/html", "application/xhtml+xml")
        if not declared and html and (found := _META_CHARSET.search(self.body[:4096])):
            declared = found.group(1).decode("ascii")
        if declared:
            with contextlib.suppress(LookupError):
                codec = codecs.lookup(declared).name
        return self.body.decode(codec, errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for host, in its order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _no_cookies() -> CookieJar:
    # Requests go to pinned IP addresses; a jar keyed by them could leak cookies across sites.
    return CookieJar(policy=DefaultCookiePolicy(allowed_domains=[]))


class _Robots(RobotFileParser):
    """A robots.txt parser, with the two switches `can_fetch` reads declared (the standard
    library sets and reads them; its stubs leave them out)."""

    allow_all: bool
    disallow_all: bool


class SafeFetcher:
    """Fetches web pages under the limits of ToolSettings. Use as an async context manager."""

    def __init__(
        self,
        settings: ToolSettings,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self._resolve = resolver or system_resolve
        self._client = httpx.AsyncClient(
            transport=transport,
            trust_env=False,  # an environment proxy would defeat the address pinning
            follow_redirects=False,
            timeout=settings.fetch_timeout,
            cookies=_no_cookies(),
            headers={"User-Agent": settings.user_agent, "Accept-Encoding": "gzip, deflate"},
        )
        self._robots: dict[str, RobotFileParser] = {}
        self._robots_locks: dict[str, asyncio.Lock] = {}

    async def __aenter__(self) -> SafeFetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every pooled connection."""
        await self._client.aclose()

    async def get(self, url: str) -> Page:
        """Fetch a web page a model or a page pointed at, under every rule of this module."""
        page = await self._guarded(
            url,
            lambda: self._follow(url, types=self.settings.fetch_content_types, robots=True),
        )
        if not 200 <= page.status < 300:
            message = f"{page.url} answered HTTP {page.status}"
            raise FetchFailed(message, url=url, status=page.status)
        return page

    async def call_api(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Page:
        """Call a search provider the admin configured and return its JSON answer.

        The configured origin is trusted (a self-hosted SearXNG often lives on a private
        network), but only for this request: redirects are not followed, robots.txt does
        not apply, and the answer must be JSON within the size cap.
        """

        async def call() -> Page:
            target = self._parse(url)
            addresses = await self._addresses(target, trusted=True)
            response = await self._send(target, method, addresses, json=json, headers=headers)
            try:
                if not 200 <= response.status_code < 300:
                    raise FetchFailed(
                        f"The search provider answered HTTP {response.status_code}",
                        url=url,
                        status=response.status_code,
                    )
                return await self._read(target, response, ("application/json",), redirects=())
            finally:
                await response.aclose()

        return await self._guarded(url, call)

    async def _guarded(self, url: str, fetch: Callable[[], Awaitable[Page]]) -> Page:
        """Run one fetch under the overall deadline, turning transport errors into ours."""
        seconds = self.settings.fetch_timeout
        try:
            async with asyncio.timeout(seconds):
                return await fetch()
        except (TimeoutError, httpx.TimeoutException):
            message = f"{url} did not answer within {seconds:g} seconds"
            raise FetchTimeout(message, url=url) from None
        except httpx.HTTPError as error:
            raise FetchFailed(f"{url} could not be fetched: {error}", url=url) from None

    async def _follow(
        self, url: str, *, types: tuple[str, ...] | None, robots: bool, limit: int | None = None
    ) -> Page:
        """Request url and follow redirects by hand, checking each hop before connecting."""
        target = self._parse(url)
        redirects: list[str] = []
        while True:
            addresses = await self._addresses(target, trusted=False)
            if robots:
                await self._check_robots(target)
            response = await self._send(target, "GET", addresses)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECTS and location:
                    if len(redirects) >= self.settings.fetch_max_redirects:
                        raise FetchFailed(
                            f"{url} redirected more than {self.settings.fetch_max_redirects} "
                            "times; not followed further",
                            url=url,
                        )
                    next_url = urljoin(str(target.url), location.strip())
                    redirects.append(next_url)
                    target = self._parse(next_url)
                    continue
                if not 200 <= response.status_code < 300:
                    return Page(str(target.url), response.status_code, redirects=tuple(redirects))
                return await self._read(target, response, types, tuple(redirects), limit=limit)
            finally:
                await response.aclose()

    def _parse(self, url: str) -> Target:
        try:
            return parse_target(url)
        except AddressRefused as error:
            raise FetchBlocked(str(error), url=url) from None

    def _allowed(self, target: Target) -> bool:
        return is_allowed(target.host, target.port, self.settings.allow_hosts)

    async def _addresses(self, target: Target, *, trusted: bool) -> list[str]:
        """Resolve the target and check every address; the checked ones are connected to."""
        allowed = trusted or self._allowed(target)
        if target.literal is not None:
            addresses = [target.literal]
        else:
            if is_local_name(target.host) and not allowed:
                raise FetchBlocked(
                    f"{target.url} was not fetched: {target.host} is this machine.",
                    url=str(target.url),
                )
            try:
                found = await self._resolve(target.host, target.port)
            except OSError:
                raise FetchFailed(
                    f"The name {target.host} could not be resolved", url=str(target.url)
                ) from None
            addresses = [a for a in (literal_address(str(item)) for item in found) if a]
            if not addresses:
                raise FetchFailed(f"The name {target.host} has no address", url=str(target.url))
        if not allowed:
            for address in addresses:
                if reason := non_public_reason(address):
                    what = f"{address} is" if target.literal else f"{target.host} is {address},"
                    raise FetchBlocked(
                        f"{target.url} was not fetched: {what} {reason}. "
                        "Only public internet addresses are fetched.",
                        url=str(target.url),
                    )
        return [str(address) for address in addresses]

    async def _send(
        self,
        target: Target,
        method: str,
        addresses: list[str],
        *,
        json: Any = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Open a streamed response from the first checked address that accepts a connection."""
        sent_headers = {**(headers or {}), "Host": target.host_header}
        extensions = {}
        if target.url.scheme == "https" and target.literal is None:
            # TLS is verified against the name, though the socket goes to the checked IP.
            extensions["sni_hostname"] = target.host
            # The pool is keyed by IP: never reuse a TLS session made for another name.
            sent_headers["Connection"] = "close"
        error: httpx.ConnectError | None = None
        for address in addresses[:3]:
            request = self._client.build_request(
                method,
                target.url.copy_with(host=address),
                json=json,
                headers=sent_headers,
                extensions=extensions,
            )
            try:
                return await self._client.send(request, stream=True)
            except httpx.ConnectError as failure:
                error = failure
        raise FetchFailed(
            f"Could not connect to {target.host_header}: {error}", url=str(target.url)
        )

    async def _read(
        self,
        target: Target,
        response: httpx.Response,
        types: tuple[str, ...] | None,
        redirects: tuple[str, ...],
        *,
        limit: int | None = None,
    ) -> Page:
        """Check the content type, then read the body, stopping at the size cap."""
        url = str(target.url)
        media, charset = _content_type(response.headers.get("content-type", ""))
        if types is not None and not _type_allowed(media, types):
            shown = media or "no content type"
            raise FetchUnsupported(f"{url} is {shown}, which the web tools do not read", url=url)
        truncate = limit is not None
        cap = limit if limit is not None else self.settings.fetch_max_bytes
        encoding = response.headers.get("content-encoding", "").strip().lower()
        declared = response.headers.get("content-length", "")
        plain = encoding in ("", "identity")
        if not truncate and plain and declared.isdigit() and int(declared) > cap:
            raise FetchTooLarge(_too_large(url, cap), url=url)
        inflater = Inflater(encoding, url)
        body = bytearray()
        async for chunk in response.aiter_raw():
            body += inflater.feed(chunk, cap - len(body))
            if len(body) > cap:
                if truncate:
                    break
                raise FetchTooLarge(_too_large(url, cap), url=url)
        return Page(url, response.status_code, media, charset, bytes(body[:cap]), redirects)

    async def _check_robots(self, target: Target) -> None:
        if not self.settings.respect_robots:
            return
        key = target.site
        lock = self._robots_locks.setdefault(key, asyncio.Lock())
        async with lock:
            parser = self._robots.get(key)
            if parser is None:
                parser = self._robots[key] = await self._load_robots(target)
        if not parser.can_fetch(self.settings.user_agent, str(target.url)):
            raise FetchDisallowed(
                f"{target.url} was not fetched: the site's robots.txt disallows it",
                url=str(target.url),
            )

    async def _load_robots(self, target: Target) -> RobotFileParser:
        """Read robots.txt with this same fetcher; per RFC 9309 a 4xx allows all, and an
        unreachable or failing robots.txt disallows all."""
        url = f"{target.site}/robots.txt"
        parser = _Robots(url)
        try:
            page = await self._follow(url, types=None, robots=False, limit=ROBOTS_MAX_BYTES)
        except (FetchError, httpx.HTTPError):
            parser.disallow_all = True
            return parser
        if 200 <= page.status < 300:
            parser.parse(page.text().splitlines())
        elif 400 <= page.status < 500:
            parser.allow_all = True
        else:
            parser.disallow_all = True
        return parser


def _content_type(header: str) -> tuple[str, str | None]:
    media, _, rest = header.partition(";")
    charset = None
    for param in rest.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media.strip().lower(), charset


def _type_allowed(media: str, allowed: tuple[str, ...]) -> bool:
    if media in allowed:
        return True
    return (media.endswith("+xml") and "application/xml" in allowed) or (
        media.endswith("+json") and "application/json" in allowed
    )


def _too_large(url: str, cap: int) -> str:
    return f"{url} is larger than the {cap / 1024 / 1024:.3g} MB limit; not read"


__all__ = [
    "FetchBlocked",
    "FetchDisallowed",
    "FetchError",
    "FetchFailed",
    "FetchTimeout",
    "FetchTooLarge",
    "FetchUnsupported",
    "Page",
    "SafeFetcher",
]
