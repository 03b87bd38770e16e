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
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from workflows.engine.contracts import ActionContext, ActionResult, ProducedDocument

from .mcp_http import (
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
DESCRIPTION_CHARS = 160
"""A tool's description as the model sees it (the first sentence, at most this long)."""
PARAMETER_NOTE_CHARS = 120
RESERVED_METHODS = frozenset({"web", "document", "ai", "catalog"})
"""The built-in actions' methods: no server may take their names."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_]+")
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


class McpServer(BaseModel):
    """One MCP server: how to reach it and which of its tools the loop may use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The catalog's method for its tools: `<name>.<tool>`."""
    command: tuple[str, ...] = ()
    """stdio: the command and its arguments (operator's configuration only)."""
    env: dict[str, str] = Field(default_factory=dict)
    """stdio: environment variables for the command (e.g. its API key)."""
    url: str = ""
    """Streamable HTTP: the endpoint, e.g. https://mcp.example.com/mcp."""
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    """HTTP: request headers (e.g. Authorization); never shown in prompts or events."""
    tools: tuple[str, ...] | None = None
    """The tools the loop may use (None: all the server lists)."""
    approval: bool | tuple[str, ...] = True
    """Which tools wait for the user's approval: all (the default), none, or those listed."""
    timeout: float = Field(default=60.0, gt=0, le=900)
    """Seconds one tool call may take."""
    max_output_chars: int = Field(default=20_000, ge=200, le=2_000_000)
    """A result's text beyond this is cut (and the observation says so)."""
    owner: int | None = None
    """A user's own server (from Connections): visible to that user only."""

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                "a server's name is 1-31 lowercase letters, digits or underscores, starting "
                "with a letter (it names its tools: <name>.<tool>)"
            )
        if name in RESERVED_METHODS:
            raise ValueError(f"{name!r} is the method of built-in actions; choose another name")
        return name

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, command: Any) -> Any:
        return shlex.split(command) if isinstance(command, str) else command

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either a command (stdio) or a url (streamable HTTP)")
        if self.url and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError("the url must be http:// or https://")
        if self.owner is not None and self.command:
            raise ValueError("a user's server is reached over HTTP only")
        return self

    @property
    def key(self) -> str:
        """Its identity in the listing cache (a user's server is theirs alone)."""
        return f"{self.owner or 0}:{self.name}"

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    def needs_approval(self, tool: str) -> bool:
        if isinstance(self.approval, bool):
            return self.approval
        return tool in self.approval


def load_servers(raw: Any) -> tuple[list[McpServer], list[str]]:
    """The servers of `POWERON_MCP_SERVERS`: JSON (an object of name → settings, or a list
    with names) or `@/path/to/file.json`. Returns the valid servers and, for each invalid
    one, what is wrong (the others still load)."""
    if not raw:
        return [], []
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("@"):
            try:
                text = Path(text[1:]).read_text()
            except OSError as error:
                return [], [f"POWERON_MCP_SERVERS: cannot read {text[1:]}: {error.strerror}"]
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as error:
            return [], [f"POWERON_MCP_SERVERS is not valid JSON: {error}"]
    entries = [{"name": k, **v} for k, v in raw.items()] if isinstance(raw, dict) else raw
    servers: list[McpServer] = []
    problems: list[str] = []
    for entry in entries if isinstance(entries, list) else [entries]:
        name = entry.get("name", "?") if isinstance(entry, dict) else "?"
        try:
            server = McpServer.model_validate(entry)
        except ValidationError as error:
            reasons = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'server'}: {e['msg']}" for e in error.errors()
            )
            problems.append(f"MCP server {name!r} is not usable: {reasons}")
            continue
        if any(s.name == server.name for s in servers):
            problems.append(f"MCP server {server.name!r} is configured twice; the first counts")
            continue
        servers.append(server)
    return servers, problems


# --- Tools -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def catalog_name(tool: str) -> str:
    """A tool's name as the catalog's action: letters, digits and underscores."""
    return _TOOL_NAME.sub("_", tool).strip("_")[:60] or "tool"


def short_description(text: str) -> str:
    """The first sentence, on one line, within DESCRIPTION_CHARS."""
    line = " ".join((text or "").split())
    first = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    return first[:DESCRIPTION_CHARS].rstrip()


class McpArguments(BaseModel):
    """The arguments of one MCP tool: its fields from the tool's input schema, checked against
    the whole schema (types, enums, ranges) before the call."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    input_schema: ClassVar[dict[str, Any]] = {}
    prompt_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls.prompt_schema

    @model_validator(mode="after")
    def _against_schema(self) -> McpArguments:
        import jsonschema

        validator = jsonschema.Draft202012Validator(self.input_schema)
        problems = sorted(validator.iter_errors(self.arguments()), key=lambda e: list(e.path))
        if problems:
            raise ValueError(
                "; ".join(
                    f"{'.'.join(map(str, p.path)) or 'arguments'}: {p.message}"
                    for p in problems[:5]
                )
            )
        return self

    def arguments(self) -> dict[str, Any]:
        """The arguments to send: the fields set, under the names the server gave them."""
        return self.model_dump(by_alias=True, exclude_unset=True)


def arguments_model(server: str, spec: ToolSpec) -> type[McpArguments]:
    """The Parameters model of one tool, from its input schema."""
    schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    for position, (name, prop) in enumerate(properties.items()):
        usable = _FIELD.match(name) and not name.startswith("model_")
        key = name if usable else f"field_{position}"
        default = ... if name in required else None
        fields[key] = (Any, Field(default, alias=name) if key != name else default)
        shown[name] = _prompt_property(prop if isinstance(prop, dict) else {})
    model = create_model(  # type: ignore[call-overload]
        f"{server}_{catalog_name(spec.name)}_arguments", __base__=McpArguments, **fields
    )
    model.input_schema = schema
    model.prompt_schema = {
        "type": "object",
        "properties": shown,
        "required": sorted(required & set(properties)),
    }
    return model


def _prompt_property(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as Stage 2 sees it: its type and a short note (server text, cut short)."""
    kept = {k: v for k, v in prop.items() if k in ("type", "enum", "items", "minimum", "maximum")}
    note = " ".join(str(prop.get("description") or "").split())[:PARAMETER_NOTE_CHARS]
    if note:
        kept["description"] = note.replace("<<<", "< < <")
    return kept


class McpTool:
    """One tool of an MCP server, as an action of the catalog."""

    name: ClassVar[str]
    description: ClassVar[str]
    Parameters: ClassVar[type[BaseModel]]
    uses_documents: ClassVar[bool] = False
    connection_kind: ClassVar[str | None] = None
    server: ClassVar[McpServer]
    remote_name: ClassVar[str]
    untrusted_summary: ClassVar[str]
    """The server's own description: fenced as untrusted text in the catalog."""

    def __init__(self, hub: McpHub) -> None:
        self.hub = hub

    async def run(self, params: Any, ctx: ActionContext) -> ActionResult:
        arguments = params.arguments() if isinstance(params, McpArguments) else dict(params or {})
        return await self.hub.call(self.server, self.remote_name, arguments)


def tool_class(server: McpServer, spec: ToolSpec) -> type[McpTool]:
    """The catalog action of one listed tool."""
    summary = short_description(spec.description)
    return type(
        f"Mcp_{server.name}_{catalog_name(spec.name)}",
        (McpTool,),
        {
            "name": f"{server.name}.{catalog_name(spec.name)}",
            "description": summary or f"{spec.name} (MCP server {server.name})",
            "Parameters": arguments_model(server.name, spec),
            "server": server,
            "remote_name": spec.name,
            "untrusted_summary": summary,
        },
    )


# --- Listing, connections, calls ---------------------------------------------------------------


@dataclass
class Listing:
    """What a server listed (or why it could not), and when."""

    tools: list[ToolSpec] = field(default_factory=list)
    error: str = ""
    at: float = 0.0


_LISTINGS: dict[str, Listing] = {}
"""Per process: the latest listing of each server, reused for LISTING_SECONDS."""


def last_listing(server: McpServer) -> Listing | None:
    """The server's latest listing in this process, fresh or not (for the Tools panel)."""
    return _LISTINGS.get(server.key)


def forget_listings() -> None:
    """Drop every cached listing (tests, or after the configuration changed)."""
    _LISTINGS.clear()


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
    ) -> None:
        self.servers = {server.name: server for server in servers}
        self.allow_hosts = frozenset(allow_hosts)
        self.resolve = resolve
        self._clients: dict[str, asyncio.Future[Any]] = {}
        self._holders: list[asyncio.Task[None]] = []
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
        """The server's tools: the cached listing while it is fresh, else asked anew."""
        cached = _LISTINGS.get(server.key)
        if cached is not None and time.monotonic() - cached.at < LISTING_SECONDS:
            return cached
        try:
            client = await self.client(server)
            async with asyncio.timeout(CONNECT_SECONDS):
                listed = await client.list_tools()
            specs = [
                ToolSpec(t.name, t.description or "", dict(t.input_schema or {}))
                for t in listed.tools
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
            self._holders.append(asyncio.create_task(self._hold(server, pending, pinned)))
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
        try:
            transport = transport_of(server, refusals.append, pinned=pinned)
            async with Client(transport, mode="legacy") as client:
                ready.set_result(client)
                await self._closing.wait()
        except BaseException as error:  # noqa: BLE001 - a failed start is reported to callers
            if not ready.done():
                reason = describe_failure(server, error)
                if refusals:
                    reason += f" (HTTP {refusals[-1]})"
                ready.set_exception(ServerUnavailable(reason))
            if isinstance(error, asyncio.CancelledError):
                raise
            logger.info("MCP server %s closed: %s", server.name, error)

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
        return to_result(server, tool, result)

    async def aclose(self) -> None:
        """Close every connection of the run (stdio servers are stopped)."""
        self._closing.set()
        if self._holders:
            await asyncio.wait(self._holders, timeout=10)
        for holder in self._holders:
            holder.cancel()
        self._holders.clear()
        self._clients.clear()


def redact(server: McpServer, text: str) -> str:
    """Text without the server's header or environment values (its credentials)."""
    for value in (*server.headers.values(), *server.env.values()):
        for secret in {value, value.removeprefix("Bearer ").strip()}:
            if len(secret) >= 6:
                text = text.replace(secret, "***")
    return text


def describe_failure(server: McpServer, error: BaseException) -> str:
    """A server's failure in one line for people (exception groups unwrapped)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, ServerUnavailable):
        return str(error)
    where = " ".join(server.command[:1]) if server.command else urlsplit(server.url).netloc
    text = " ".join(redact(server, str(error)).split())[:300] or type(error).__name__
    return f"MCP server {server.name} ({where}) failed: {text}"


# --- Results -----------------------------------------------------------------------------------


def to_result(server: McpServer, tool: str, result: Any) -> ActionResult:
    """A tool's result as documents and notes: text as Markdown, structured content as JSON,
    embedded resources and images as files; a server-reported error as a failure."""
    cap = server.max_output_chars
    texts: list[str] = []
    documents: list[ProducedDocument] = []
    notes: list[str] = []
    base = catalog_name(tool)
    for position, block in enumerate(result.content or [], start=1):
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            data = base64.b64decode(block.data)
            extension = (block.mime_type or "application/octet-stream").split("/")[-1][:8]
            documents.append(
                ProducedDocument(
                    name=f"{base}_{position}.{extension}", mime=block.mime_type, data=data
                )
            )
        elif kind == "resource":
            resource = block.resource
            name = Path(urlsplit(str(resource.uri)).path).name or f"{base}_{position}"
            if getattr(resource, "text", None) is not None:
                data = resource.text.encode()
            else:
                data = base64.b64decode(resource.blob)
            mime = resource.mime_type or "application/octet-stream"
            documents.append(ProducedDocument(name=name[:120], mime=mime, data=data))
        elif kind == "resource_link":
            notes.append(f"Linked resource: {block.uri}")
    text = redact(server, "\n\n".join(texts))
    if len(text) > cap:
        notes.append(f"The result was cut to {cap:,} characters (it had {len(text):,}).")
        text = text[:cap]
    if result.is_error:
        return ActionResult(
            success=False,
            error=f"{server.name}.{tool} reported an error: {' '.join(text.split())[:500]}",
        )
    if text:
        documents.insert(
            0, ProducedDocument(name=f"{base}.md", mime="text/markdown", data=text.encode())
        )
    if result.structured_content is not None:
        structured = json.dumps(result.structured_content, indent=2, ensure_ascii=False)
        documents.append(
            ProducedDocument(
                name=f"{base}.json", mime="application/json", data=structured[:cap].encode()
            )
        )
    if not documents:
        notes.append(f"{server.name}.{tool} returned nothing.")
    return ActionResult(success=True, documents=documents, label=base[:40], notes=notes)


def approval_patterns(servers: Sequence[McpServer]) -> list[str]:
    """The actions of these servers that wait for the user's approval, as policy patterns."""
    patterns: list[str] = []
    for server in servers:
        if server.approval is True:
            patterns.append(f"{server.name}.*")
        elif isinstance(server.approval, tuple):
            patterns.extend(f"{server.name}.{catalog_name(tool)}" for tool in server.approval)
    return patterns


def user_server(*, label: str, url: str, secret: str, owner: int) -> McpServer | None:
    """A user's own server from one of their connections (kind mcp), or None when its label
    cannot name a server."""
    try:
        return McpServer(
            name=label.replace("-", "_").lower(),
            url=url,
            headers={"Authorization": f"Bearer {secret}"} if secret else {},
            owner=owner,
        )
    except ValidationError:
        return None


def servers_for(
    site: Sequence[McpServer], own: Mapping[str, McpServer] | None = None
) -> list[McpServer]:
    """The servers one user's run may use: the site's, then their own (a name the site already
    uses is the site's)."""
    taken = {server.name for server in site}
    return [*site, *(s for name, s in (own or {}).items() if name not in taken)]
