"""The Tools panel: every action of the catalog, usable here or not and why, and the tools of
the MCP servers a user may use as their latest listing in this process found them."""

from __future__ import annotations

from typing import Any

from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp import tools as mcp_tools
from workflows.tools.mcp.servers import McpServer, server_name

from .setup import mcp_servers, site_mcp_servers, tool_settings

SECRET_UNREADABLE = (
    "Its token can no longer be read here (the site's key changed); enter it again under "
    "Connections."
)


def tool_overview(
    *, connection_kinds: set[str] | frozenset[str] = frozenset(), owner: Any = None
) -> list[dict[str, Any]]:
    """Every tool of the catalog: whether it is usable here and, if not, why and which
    environment variables to set. With `owner`, their connections count, and the MCP servers
    they may use follow, as their latest listing in this process found them."""
    from workflows.tools.registry import CATALOG, ToolRegistry, variables_named

    everyone = list(owner.connections.all()) if owner is not None else []
    # What a round would use: a connection whose secret no longer opens sits out.
    connections = [c for c in everyone if not c.needs_secret_again]
    kinds = set(connection_kinds) | {c.kind for c in connections}
    registry = ToolRegistry(tool_settings(), connection_kinds=kinds)
    unavailable = registry.unavailable()
    rows = [
        {
            "name": tool.name,
            "description": tool.description,
            "available": tool.name not in unavailable,
            "reason": unavailable.get(tool.name, ""),
            "variables": variables_named(unavailable.get(tool.name, "")),
        }
        for tool in (tool_class() for tool_class in CATALOG)
    ]
    servers = mcp_servers(connections) if owner is not None else site_mcp_servers()
    unreadable = [
        _row(f"{server_name(c.label)}.*", "", reason=SECRET_UNREADABLE, own=True)
        for c in everyone
        if c.needs_secret_again and c.kind == "mcp"
    ]
    return rows + [row for server in servers for row in mcp_overview(server)] + unreadable


def mcp_overview(server: McpServer) -> list[dict[str, Any]]:
    """The Tools panel's rows for one MCP server: its tools as last listed, or why it has
    none, or that a run will list them."""
    where = "your MCP server" if server.owner else f"MCP server {server.name}"
    asks = " Each call waits for your approval." if server.approval is True else ""
    listing = mcp.last_listing(server)
    if listing is None:  # not asked yet in this process: neither available nor failed
        description = f"The tools of {where} ({server.transport}) are listed when a run starts."
        return [{**_row(f"{server.name}.*", description), "available": None}]
    if listing.error:
        return [_row(f"{server.name}.*", "", reason=listing.error, own=server.owner is not None)]
    return [
        _row(
            f"{server.name}.{mcp_tools.catalog_name(spec.name)}",
            f"{mcp_tools.short_description(spec.description)} (from {where}.{asks})".replace(
                ".)", ")"
            ),
        )
        for spec in listing.tools
        if server.tools is None or spec.name in server.tools
    ]


def _row(name: str, description: str, *, reason: str = "", own: bool = False) -> dict[str, Any]:
    """A row of an MCP server: a user's own is fixed under Connections, the site's by the
    operator's setting."""
    return {
        "name": name,
        "description": description,
        "available": not reason,
        "reason": reason,
        "variables": ["POWERON_MCP_SERVERS"] if reason and not own else [],
        "own": own,
    }
