"""Who calls: the endpoint puts the token's owner in the request's ASGI scope, and every
handler reads it back and checks the token's scope."""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext

from workflows.api.auth import Principal

SCOPE_KEY = "poweron.principal"
"""Where the endpoint puts the caller in the ASGI scope."""


class ToolRefused(Exception):
    """The tool cannot do what was asked; the text says why (the result is an error)."""


def principal_of(ctx: ServerRequestContext[Any, Any]) -> Principal:
    """The caller of an MCP request (the endpoint authenticated it)."""
    principal = ctx.request.scope.get(SCOPE_KEY) if ctx.request is not None else None
    assert isinstance(principal, Principal), "an MCP request that did not pass the endpoint"
    return principal


def has_scope(principal: Principal, scope: str) -> bool:
    """Whether the caller's token has `scope`."""
    return principal.token is None or scope in principal.token.scopes


def require(principal: Principal, scope: str) -> None:
    """Refuse unless the caller's token has `scope`."""
    token = principal.token
    if token is not None and not has_scope(principal, scope):
        raise ToolRefused(
            f"This tool needs a token with the scope {scope!r}; this one has "
            f"{', '.join(token.scopes)}. Make one with that scope on PowerOn's API tokens page."
        )
