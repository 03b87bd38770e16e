"""MCP servers as tool sources: each server's tools join the catalog as `<server>.<tool>`.

A server is configured by the operator (`POWERON_MCP_SERVERS`: a stdio command or a
streamable-HTTP URL, with its headers or environment) or, for HTTP only, by a user on the
Connections page. Its tools are listed when a run is set up (the listing is cached for
`LISTING_SECONDS`), shown to the model as catalog lines with their parameter names and a
short description fenced as untrusted text, and called through one connection per server and
run, closed when the run ends. A result becomes documents (text, structured content,
resources, images) and a compact observation like any built-in action's.

What a server says is data, never instructions: descriptions are cut short and fenced, results
are capped (`max_output_chars`), calls time out (`timeout`), and a server that fails to start,
list or answer leaves the catalog with its reason, shown in the Tools panel.

This module lists servers' tools and holds a run's connections (`McpHub`); a server's settings
are in `mcp_servers`, its tools as actions and their results in `mcp_tools`, the HTTP
transport and its address checks in `mcp_http`.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from workflows.engine.records.protocols import ActionResult
from workflows.tools.mcp.servers import McpServer, redact
from workflows.tools.mcp.tools import (
    McpTool,
    ResultLimits,
    ToolSpec,
    catalog_name,
    listed_spec,
    to_result,
    tool_class,
)
from workflows.tools.mcp.transport import (
    CONNECT_SECONDS,
    Resolver,
    ServerUnavailable,
    check_address,
    system_resolve,
    transport_of,
)

logger = logging.getLogger(__name__)

LISTING_SECONDS = 60.0
"""How long a server's tool listing is reused before it is asked again."""


@dataclass
class Listing:
    """What a server listed (or why it could not), and when."""

    tools: list[ToolSpec] = field(default_factory=list)
    error: str = ""
    at: float = 0.0


_LISTINGS: dict[str, Listing] = {}
"""Per process: the latest listing of each server, reused for LISTING_SECONDS."""
_REFRESHING: set[str] = set()
"""Servers whose failed listing is being asked again, beside a run."""


def last_listing(server: McpServer) -> Listing | None:
    """The server's latest listing in this process, fresh or not (for the Tools panel)."""
    return _LISTINGS.get(server.key)


def forget_listings() -> None:
    """Drop every cached listing (tests, or after the configuration changed)."""
    _LISTINGS.clear()
    _REFRESHING.clear()


class McpHub:
    """The MCP connections of one run: opened on first use, reused by every step, closed by
    `aclose()` when the run ends. Each connection lives in a task of its own, so that whichever
    task ends the run may close it."""

    def __init__(
        self,
        servers: Iterable[McpServer],
        *,
        allow_hosts: Iterable[str] = (),
        resolve: Resolver = system_resolve,
        limits: ResultLimits | None = None,
    ) -> None:
        self.servers = {server.name: server for server in servers}
        self.limits = limits or ResultLimits()
        """What one call may bring back (`results`), and so one HTTP response."""
        self.allow_hosts = frozenset(allow_hosts)
        self.resolve = resolve
        self._clients: dict[str, asyncio.Future[Any]] = {}
        self._holders: dict[asyncio.Task[None], asyncio.Future[Any]] = {}
        """Each connection's task, with the future of its client."""
        self._refreshes: list[asyncio.Task[Listing]] = []
        self._closing = asyncio.Event()

    async def __aenter__(self) -> McpHub:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def catalog(self) -> tuple[list[McpTool], dict[str, str]]:
        """The usable tools of every server, and for each failing server or left-out tool,
        the reason (keyed by `<server>.*` or the tool's catalog name)."""
        tools: list[McpTool] = []
        unavailable: dict[str, str] = {}
        listings = await asyncio.gather(*(self.listing(s) for s in self.servers.values()))
        for server, listing in zip(self.servers.values(), listings, strict=True):
            if listing.error:
                unavailable[f"{server.name}.*"] = listing.error
                continue
            for spec in listing.tools:
                if server.tools is not None and spec.name not in server.tools:
                    continue
                try:
                    tools.append(tool_class(server, spec)(self))
                except (ValidationError, TypeError, ValueError) as error:
                    name = f"{server.name}.{catalog_name(spec.name)}"
                    unavailable[name] = f"its input schema is not usable ({error})"[:300]
        return tools, unavailable

    async def listing(self, server: McpServer) -> Listing:
        """The server's tools: the cached listing while it is fresh, else asked anew. A
        server that failed last time is asked again beside the run, not before it: one that
        hangs would hold up the start of every run for CONNECT_SECONDS, and this run goes on
        without it (the next one has its tools if it answered)."""
        cached = _LISTINGS.get(server.key)
        if cached is not None and time.monotonic() - cached.at < LISTING_SECONDS:
            return cached
        if cached is not None and cached.error:
            if server.key not in _REFRESHING:
                _REFRESHING.add(server.key)
                refresh = asyncio.create_task(self._list(server), name=f"mcp-list-{server.name}")
                refresh.add_done_callback(lambda _: _REFRESHING.discard(server.key))
                self._refreshes.append(refresh)  # cancelled when the run ends
            return cached
        return await self._list(server)

    async def _list(self, server: McpServer) -> Listing:
        """Ask the server for its tools, and remember the answer (or why there is none)."""
        try:
            client = await self.client(server)
            async with asyncio.timeout(CONNECT_SECONDS):
                listed = await client.list_tools()
            # Without the server's credentials from here on: the Tools panel and the prompts
            # show what is kept.
            specs = [
                spec
                for t in listed.tools
                if (spec := listed_spec(server, t.name, t.description or "", t.input_schema))
            ]
            listing = Listing(tools=specs, at=time.monotonic())
        except ServerUnavailable as error:
            listing = Listing(error=str(error), at=time.monotonic())
        except TimeoutError:
            listing = Listing(
                error=f"MCP server {server.name} did not list its tools within "
                f"{CONNECT_SECONDS:g} s",
                at=time.monotonic(),
            )
        except Exception as error:  # noqa: BLE001 - any server failure is a reason, said once
            listing = Listing(error=describe_failure(server, error), at=time.monotonic())
        _LISTINGS[server.key] = listing
        return listing

    async def client(self, server: McpServer) -> Any:
        """The run's connection to a server, opened on first use."""
        pending = self._clients.get(server.name)
        if pending is None:
            pinned = None
            if server.url:  # a user's server is reached at the address checked here
                pinned = await check_address(server, self.allow_hosts, self.resolve)
            pending = asyncio.get_running_loop().create_future()
            self._clients[server.name] = pending
            self._holders[asyncio.create_task(self._hold(server, pending, pinned))] = pending
        try:
            async with asyncio.timeout(CONNECT_SECONDS):
                return await asyncio.shield(pending)
        except TimeoutError:
            raise ServerUnavailable(
                f"MCP server {server.name} did not start or answer within {CONNECT_SECONDS:g} s"
            ) from None

    async def _hold(
        self, server: McpServer, ready: asyncio.Future[Any], pinned: str | None = None
    ) -> None:
        """Open the connection, hand it out, and keep it until the run closes the hub."""
        from mcp import Client

        refusals: list[int] = []  # HTTP statuses of 400 and more: the SDK does not keep them
        # A stdio server's stderr is kept apart, not mixed into the app's log: its last
        # words explain a server that failed. Closed in the `finally` below.
        errlog = (
            tempfile.TemporaryFile("w+", errors="replace")  # noqa: SIM115
            if server.command
            else None
        )
        try:
            transport = transport_of(
                server,
                refusals.append,
                pinned=pinned,
                errlog=errlog,
                response_bytes=self.limits.response_bytes,
            )
            async with Client(transport, mode="legacy") as client:
                ready.set_result(client)
                await self._closing.wait()
        except BaseException as error:  # noqa: BLE001 - a failed start is reported to callers
            if (stop := ended_by(error)) is not None:
                if not ready.done():
                    ready.cancel()  # nobody is to wait for a connection that will not come
                if stop is error:
                    raise
                raise stop from error  # bare, as asyncio's task groups raise it: it ends the loop
            reason = describe_failure(server, error)
            if errlog is not None and (words := last_words(server, errlog)):
                reason += f"; it said: {words}"
            if not ready.done():
                if refusals:
                    reason += f" (HTTP {refusals[-1]})"
                ready.set_exception(ServerUnavailable(reason))
                logger.warning("%s", reason)  # the server never started: said once, whole
            else:
                logger.info("MCP server %s closed: %s", server.name, reason)
        finally:
            if errlog is not None:
                errlog.close()

    async def call(self, server: McpServer, tool: str, arguments: dict[str, Any]) -> ActionResult:
        """Call one tool under the server's time limit; any failure is a failed result."""
        try:
            client = await self.client(server)
            async with asyncio.timeout(server.timeout):
                result = await client.call_tool(tool, arguments)
        except ServerUnavailable as error:
            return ActionResult(success=False, error=str(error))
        except TimeoutError:
            return ActionResult(
                success=False,
                error=f"{server.name}.{tool} did not answer within {server.timeout:g} s",
            )
        except Exception as error:  # noqa: BLE001 - a server's failure is the action's failure
            return ActionResult(success=False, error=describe_failure(server, error))
        return to_result(server, tool, result, self.limits)

    async def aclose(self) -> None:
        """Close every connection of the run (stdio servers are stopped)."""
        self._closing.set()
        for refresh in self._refreshes:
            refresh.cancel()
        for holder, ready in self._holders.items():
            if not ready.done():  # still connecting (a server that hangs): nothing to close
                holder.cancel()
        if self._holders:
            await asyncio.wait(self._holders, timeout=10)
        for holder in self._holders:
            holder.cancel()
        self._holders.clear()
        self._refreshes.clear()
        self._clients.clear()


LAST_WORDS_WINDOW = 64 * 1024
"""How much of the end of a stdio server's stderr is read for its last words."""


def last_words(server: McpServer, errlog: Any, limit: int = 300) -> str:
    """The end of what a stdio server wrote to its stderr, on one line, redacted ("" for
    none). Redacted whole lines before it is cut: a secret cut in two is not found."""
    try:
        errlog.flush()
        end = errlog.seek(0, 2)
        start = max(0, end - LAST_WORDS_WINDOW)
        errlog.seek(start)
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    if start:  # the window opens inside a line, perhaps inside a secret: leave that line out
        text = text.partition("\n")[2]
    lines = [line.strip() for line in redact(server, text).splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-limit:]


def ended_by(error: BaseException) -> BaseException | None:
    """What ends a connection through no fault of the server's: an interrupt or an exit of the
    interpreter (Ctrl+C, SystemExit) or a cancellation (the run ended), bare or inside the
    SDK's task groups; None for the server's own failure, which is said to callers."""
    if isinstance(error, KeyboardInterrupt | SystemExit | asyncio.CancelledError):
        return error
    if not isinstance(error, BaseExceptionGroup):
        return None
    leaves: list[BaseException] = []
    pending: list[BaseException] = [error]
    while pending:
        item = pending.pop(0)
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        else:
            leaves.append(item)
    exits = [leaf for leaf in leaves if isinstance(leaf, KeyboardInterrupt | SystemExit)]
    if exits:
        return exits[0]
    if leaves and all(isinstance(leaf, asyncio.CancelledError) for leaf in leaves):
        return leaves[0]
    return None


def describe_failure(server: McpServer, error: BaseException) -> str:
    """A server's failure in one line for people (exception groups unwrapped)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, ServerUnavailable):
        return str(error)
    where = " ".join(server.command[:1]) if server.command else urlsplit(server.url).netloc
    text = " ".join(redact(server, str(error)).split())[:300] or type(error).__name__
    return f"MCP server {server.name} ({where}) failed: {text}"
