"""The ASGI app at /mcp: Host and Origin checked, the bearer token authenticated, then the
MCP SDK's streamable HTTP session manager.

Daphne speaks no ASGI lifespan, and the session manager needs one running task group for its
sessions: it is started here by the first request, as a task of the server's own event loop
in a context of its own, and lives as long as that loop (a test's new loop gets a new one).
Sessions are held in the process that opened them: behind several Daphne processes, a
load balancer keeps a session's requests on one process (`Mcp-Session-Id`), or clients use
the stateless 2026-07-28 protocol.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from poweron.bodylimit import body_limit
from workflows.api import tokens
from workflows.api.auth import Principal
from workflows.api.errors import REALM
from workflows.live.origin import origin_allowed

from .caller import SCOPE_KEY
from .server import server

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH = "/mcp"
REFUSALS = {
    "unknown": "The bearer token is not a token of this site.",
    "expired": "The bearer token has expired.",
    "revoked": "The bearer token was revoked.",
}


def is_mcp(scope: Scope) -> bool:
    """Whether an HTTP request is for the MCP endpoint."""
    return scope["type"] == "http" and str(scope.get("path", "")).rstrip("/") == PATH


def mount(http_app: App) -> App:
    """`http_app` with /mcp answered by the MCP endpoint."""
    endpoint = McpEndpoint()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if is_mcp(scope):
            await endpoint(scope, receive, send)
        else:
            await http_app(scope, receive, send)

    return app


async def respond(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    """A small JSON answer (the refusals before MCP)."""
    data = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    head += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": data})


def unauthorised(error: str, detail: str) -> tuple[int, dict[str, Any], dict[str, str]]:
    """A 401 with its challenge (RFC 6750)."""
    challenge = REALM if not error else f'{REALM}, error="{error}", error_description="{detail}"'
    body = {"error": error or "invalid_request", "error_description": detail}
    return 401, body, {"WWW-Authenticate": challenge}


def host_allowed(host: str) -> bool:
    """Whether the Host header names this site (ALLOWED_HOSTS, as Django checks it)."""
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


@database_sync_to_async
def authenticate(header: str) -> Principal | tuple[int, dict[str, Any], dict[str, str]]:
    """The caller of an `Authorization` header, or the refusal to send (401, 429)."""
    if not header:
        return unauthorised("", "Send a PowerOn API token: Authorization: Bearer <token>.")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return unauthorised("invalid_request", "Authorization must read `Bearer <token>`.")
    try:
        found = tokens.token_authenticate(value.strip())
    except tokens.TokenRefused as refused:
        return unauthorised("invalid_token", REFUSALS[refused.reason])
    most = settings.POWERON_API_REQUESTS_PER_MINUTE
    wait = tokens.token_spend(found, limit=most)
    if wait is not None:
        body = {"error": "rate_limited", "error_description": f"This token may make {most} "
                "requests a minute."}  # fmt: skip
        return 429, body, {"Retry-After": str(wait)}
    return Principal(user=found.owner, token=found)


def authenticated_user(principal: Principal) -> AuthenticatedUser:
    """The SDK's view of the caller: a session is bound to the token that opened it."""
    token = principal.token
    assert token is not None
    return AuthenticatedUser(
        AccessToken(
            token=token.prefix,
            client_id=f"poweron-token-{token.pk}",
            scopes=list(token.scopes),
            subject=str(principal.user.pk),
        )
    )


class SessionManagers:
    """One running session manager per event loop, started by the first request."""

    def __init__(self, factory: Callable[[], StreamableHTTPSessionManager]) -> None:
        self.factory = factory
        self.running: dict[asyncio.AbstractEventLoop, asyncio.Future[StreamableHTTPSessionManager]]
        self.running = {}

    async def get(self) -> StreamableHTTPSessionManager:
        """The loop's running manager (started now if it is the first request)."""
        loop = asyncio.get_running_loop()
        for other in [each for each in self.running if each.is_closed()]:
            del self.running[other]
        started = self.running.get(loop)
        if started is None:
            started = self.running[loop] = loop.create_future()
            # Its own context: the sessions outlive the request that started them.
            loop.create_task(self._hold(started), context=contextvars.Context())
        return await asyncio.shield(started)

    async def _hold(self, started: asyncio.Future[StreamableHTTPSessionManager]) -> None:
        manager = self.factory()
        try:
            async with manager.run():
                started.set_result(manager)
                await asyncio.Event().wait()  # as long as the loop runs
        except Exception as error:  # said to the request that waits for it
            logger.exception("the MCP session manager stopped")
            if not started.done():
                started.set_exception(error)


def new_manager() -> StreamableHTTPSessionManager:
    """The SDK's session manager for PowerOn's server (Host and Origin are checked before
    it, against the site's own settings)."""
    return StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        max_request_body_size=body_limit(),
    )


class McpEndpoint:
    """The MCP endpoint: refusals first (400 Host, 403 Origin, 401 token, 429), then MCP."""

    def __init__(self) -> None:
        self.managers = SessionManagers(new_manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not host_allowed(headers.get("host", "")):
            body = {"error": "invalid_host", "error_description": "The Host is not this site."}
            await respond(send, 400, body)
            return
        origin = headers.get("origin")
        # Programs send no Origin; a page of another site (DNS rebinding included) does.
        if origin is not None and not origin_allowed(origin, scope):
            body = {"error": "forbidden_origin", "error_description": f"Origin {origin} may "
                    "not use this endpoint (the site's own origin and CSRF_TRUSTED_ORIGINS "
                    "may)."}  # fmt: skip
            await respond(send, 403, body)
            return
        caller = await authenticate(headers.get("authorization", ""))
        if not isinstance(caller, Principal):
            await respond(send, *caller)
            return
        scope = {**scope, SCOPE_KEY: caller, "user": authenticated_user(caller)}
        manager = await self.managers.get()
        await manager.handle_request(scope, receive, send)
