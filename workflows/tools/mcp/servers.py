"""MCP servers as the operator configures them (`POWERON_MCP_SERVERS`) or a user adds one
(Connections, HTTP only): their settings, checked when they load, and their credentials kept
out of what people and the model see."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

RESERVED_METHODS = frozenset({"web", "document", "ai", "catalog"})
"""The built-in actions' methods: no server may take their names."""
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")


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
        if problem := name_problem(name):
            raise ValueError(problem)
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


def secrets_of(server: McpServer) -> set[str]:
    """The server's header and environment values (its credentials), long enough to find."""
    values = (*server.headers.values(), *server.env.values())
    found = {s for v in values for s in (v, v.removeprefix("Bearer ").strip()) if len(s) >= 6}
    return found


def redact(server: McpServer, text: str) -> str:
    """Text without the server's header or environment values (its credentials)."""
    for secret in secrets_of(server):
        text = text.replace(secret, "***")
    return text


def redact_bytes(server: McpServer, data: bytes) -> bytes:
    """A file's bytes without the server's credentials (as they would be written in UTF-8)."""
    for secret in secrets_of(server):
        data = data.replace(secret.encode(), b"***")
    return data


def name_problem(name: str) -> str:
    """What keeps `name` from naming a server's tools ("" when nothing does)."""
    if not _NAME.match(name):
        return (
            "a server's name is 1-31 lowercase letters, digits or underscores, starting "
            "with a letter (it names its tools: <name>.<tool>)"
        )
    if name in RESERVED_METHODS:
        return f"{name!r} is the method of built-in actions; choose another name"
    return ""


def server_name(label: str) -> str:
    """The server name a user's connection label gives its tools (my-wiki → my_wiki)."""
    return label.replace("-", "_").lower()


def user_server(*, label: str, url: str, secret: str, owner: int) -> McpServer | None:
    """A user's own server from one of their connections (kind mcp), or None when its label
    cannot name a server."""
    try:
        return McpServer(
            name=server_name(label),
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
