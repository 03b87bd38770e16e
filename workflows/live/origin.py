"""Which pages may open a socket: the app's own origin and CSRF_TRUSTED_ORIGINS, exactly.

Channels' AllowedHostsOriginValidator compares host names only, so a page served from another
port or scheme of the same host could open a signed-in user's socket. Here an origin must
match in scheme, host and port, the way Django's CSRF check matches the Origin header.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

if TYPE_CHECKING:
    from asgiref.typing import ASGIReceiveCallable, ASGISendCallable

DEFAULT_PORTS = {"http": 80, "https": 443}


def normalise(origin: str) -> tuple[str, str, int] | None:
    """`scheme://host[:port]` as (scheme, host, port), the default port made explicit."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def own_origin(scope: Mapping[str, Any]) -> str | None:
    """The app's origin as this handshake reached it: the Host header with the scheme the
    browser used (wss → https), also when a proxy said so in SECURE_PROXY_SSL_HEADER."""
    headers = dict(scope.get("headers") or [])
    host = headers.get(b"host", b"").decode("latin-1")
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, allowed):
        return None
    secure = scope.get("scheme") in ("wss", "https")
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        name, value = proxy
        header = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
        forwarded = headers.get(header, b"").decode("latin-1").split(",")[0].strip()
        secure = forwarded == value
    return f"{'https' if secure else 'http'}://{host}"


def origin_allowed(origin: str, scope: Mapping[str, Any]) -> bool:
    """Whether a page of `origin` may open a socket reached as `scope`."""
    wanted = normalise(origin)
    if wanted is None:
        return False
    own = own_origin(scope)
    if own is not None and normalise(own) == wanted:
        return True
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "://*." in trusted:  # Django's form for every subdomain of a domain
            scheme, _, pattern = trusted.partition("://")
            netloc = origin.strip().partition("://")[2]
            if wanted[0] == scheme.lower() and is_same_domain(netloc.lower(), pattern[1:].lower()):
                return True
        elif normalise(trusted) == wanted:
            return True
    return False


class OriginValidator:
    """ASGI middleware: a handshake from any other origin (or without one) is refused."""

    def __init__(self, application: Any) -> None:
        """`application`: the ASGI 3 app behind (Channels' stubs type its middleware stacks as
        ASGI 2 or 3 alike, so no narrower type fits them)."""
        self.application = application

    async def __call__(
        self,
        scope: Any,  # a handshake's or a request's: Channels' consumers type each apart
        receive: ASGIReceiveCallable,
        send: ASGISendCallable,
    ) -> None:
        if scope["type"] == "websocket":
            origin = dict(scope.get("headers") or []).get(b"origin", b"").decode("latin-1")
            if not origin_allowed(origin, scope):
                await WebsocketDenier()(scope, receive, send)
                return
        await self.application(scope, receive, send)
