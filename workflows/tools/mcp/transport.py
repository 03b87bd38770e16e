"""How PowerOn reaches an MCP server: stdio parameters, or a streamable-HTTP client.

A user's HTTP server gets the safe fetcher's rule: its name is resolved once, every address
checked (no private, loopback, link-local or documentation address unless the operator
allowed the host), and the connection then goes to a checked address, never to whatever a
second lookup returns. TLS is still verified against the name. Without that pin a name
could answer the check with a public address and the connection with 127.0.0.1 (DNS
rebinding).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx2

from workflows.tools.web.addresses import (
    is_allowed,
    literal_address,
    literal_reason,
    non_public_reason,
    url_port,
)


class ServerSpec(Protocol):
    """What reaching a server needs of its configuration (mcp.McpServer), read only."""

    @property
    def name(self) -> str: ...
    @property
    def command(self) -> Sequence[str]: ...
    @property
    def env(self) -> Mapping[str, str]: ...
    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def timeout(self) -> float: ...
    @property
    def owner(self) -> int | None: ...


CONNECT_SECONDS = 20.0
"""How long starting a stdio server or reaching an HTTP one may take."""

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""host, port -> the addresses the name has."""


class ServerUnavailable(Exception):
    """A server could not be started, reached or listed; the message says why, for people."""


async def system_resolve(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for the name."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class ResponseTooLarge(httpx2.StreamError):
    """A server's response passed its bound and was not read further (the SDK answers the
    call with this error instead of waiting for its timeout)."""


class _Bounded(httpx2.AsyncByteStream):
    """A response body that fails once it passes `limit` bytes."""

    def __init__(self, inner: Any, limit: int) -> None:
        self.inner = inner
        self.limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                raise ResponseTooLarge(
                    f"its response passed {self.limit:,} bytes and was not read further "
                    "(POWERON_MCP_MAX_RESULT_BYTES)"
                )
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


def transport_of(
    server: ServerSpec,
    refused: Callable[[int], None] = lambda status: None,
    *,
    pinned: str | None = None,
    errlog: Any = None,
    response_bytes: int | None = None,
) -> Any:
    """What the SDK's Client connects to: a stdio server's process (its stderr written to
    `errlog`, a file, when given), or an HTTP transport with the server's headers and no
    environment proxy (`refused` hears every status of 400 and more; `pinned`: the checked
    address every request of this server's host goes to; `response_bytes`: the most one
    response, or one of its events, may carry: the SDK reads a JSON response whole)."""
    if server.command:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        parameters = StdioServerParameters(
            command=server.command[0], args=list(server.command[1:]), env=dict(server.env) or None
        )
        return parameters if errlog is None else stdio_client(parameters, errlog=errlog)
    from mcp.client.streamable_http import streamable_http_client

    async def hear(response: Any) -> None:
        if response.status_code >= 400:
            refused(response.status_code)
        if response_bytes:
            response.stream = _Bounded(response.stream, response_bytes)

    host = (urlsplit(server.url).hostname or "").lower()
    network = httpx2.AsyncHTTPTransport(trust_env=False)
    client = httpx2.AsyncClient(
        headers=server.headers,
        trust_env=False,
        timeout=httpx2.Timeout(CONNECT_SECONDS, read=server.timeout),
        event_hooks={"response": [hear]},
        transport=PinnedTransport(network, host, pinned) if pinned else network,
    )
    sized: dict[str, Any] = {"max_sse_event_size": response_bytes} if response_bytes else {}
    return _HttpTransport(streamable_http_client(server.url, http_client=client, **sized), client)


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends a host's requests to one checked address: the URL gets the address, the Host
    header and TLS's server name keep the name (so the certificate is checked against it).
    Requests for any other host are refused: the server may not send us elsewhere."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, host: str, address: str) -> None:
        self.inner = inner
        self.host = host
        self.address = address

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if (request.url.host or "").lower() != self.host:
            raise httpx2.ConnectError(
                f"refused: the MCP server's connection is pinned to {self.host}", request=request
            )
        port = request.url.port
        request.headers["Host"] = f"{self.host}:{port}" if port else self.host
        if request.url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": self.host}
        request.url = request.url.copy_with(host=self.address)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _HttpTransport:
    """The SDK's streamable-HTTP transport, closing our HTTP client with it."""

    def __init__(self, transport: Any, client: Any) -> None:
        self._transport = transport
        self._client = client

    async def __aenter__(self) -> Any:
        return await self._transport.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._transport.__aexit__(*exc)
        finally:
            await self._client.aclose()


async def check_address(
    server: ServerSpec, allow_hosts: frozenset[str], resolve: Resolver = system_resolve
) -> str | None:
    """Refuse, before any connection, a user's server on a private, loopback or link-local
    address (the fetcher's rule) unless the operator allowed its host. Returns the checked
    address a user's server named by a host name must be reached at (None when nothing is
    to be pinned: the operator's own servers, allowed hosts, literal addresses)."""
    if server.owner is None:
        return None
    parts = urlsplit(server.url)
    host = (parts.hostname or "").lower()
    port = url_port(parts)
    if is_allowed(host, port, allow_hosts):
        return None
    if reason := literal_reason(host):
        raise refusal(server, host, reason)
    if literal_address(host) is not None:
        return None  # a public literal address: nothing to resolve again
    try:
        found = await resolve(host, port)
    except OSError as error:
        raise ServerUnavailable(
            f"MCP server {server.name}: {host} could not be resolved ({error})"
        ) from None
    addresses = [a for a in (literal_address(item) for item in found) if a is not None]
    if not addresses:
        raise ServerUnavailable(f"MCP server {server.name}: {host} has no address")
    for address in addresses:
        if reason := non_public_reason(address):
            raise refusal(server, host, f"{address}, {reason}")
    return str(addresses[0])


def refusal(server: ServerSpec, host: str, reason: str) -> ServerUnavailable:
    return ServerUnavailable(
        f"MCP server {server.name}: {host} is {reason}; refused (the operator may allow it "
        "in POWERON_FETCH_ALLOW_HOSTS)"
    )
