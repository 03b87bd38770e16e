"""Only pages of the app's own origin (scheme, host and port) or of CSRF_TRUSTED_ORIGINS open
a socket: a page on another port or scheme of the same host cannot hijack a user's socket."""

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from poweron.asgi import application
from tests.live import session_cookie
from workflows import services

pytestmark = pytest.mark.django_db(transaction=True)

HOST = "127.0.0.1:8000"


async def handshake(
    user, origin: str | None, *, host: str = HOST, scheme: str = "ws", extra=()
) -> bool:
    """Open a socket on the user's workflow as a browser page of `origin` would; whether the
    handshake was accepted."""
    workflow = await database_sync_to_async(services.workflow_create)(owner=user, title="W")
    headers = [(b"host", host.encode()), (b"cookie", (await session_cookie(user)).encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers.extend(extra)
    communicator = WebsocketCommunicator(
        application, f"/ws/workflows/{workflow.pk}/?format=json", headers=headers
    )
    communicator.scope["scheme"] = scheme  # what Daphne says the browser used
    connected, _ = await communicator.connect(timeout=5)
    await communicator.disconnect()
    return connected


async def test_the_apps_own_origin_is_accepted(alice):
    """The page of the app itself (same scheme, host and port) opens its socket."""
    assert await handshake(alice, f"http://{HOST}")


async def test_same_host_on_another_port_is_refused(alice):
    """A page served from another port of the same host is refused."""
    assert not await handshake(alice, "http://127.0.0.1:9999")


async def test_same_host_and_port_with_another_scheme_is_refused(alice):
    """An https page of the same host and port is not the app's plain-http page."""
    assert not await handshake(alice, f"https://{HOST}")


async def test_a_secure_socket_accepts_the_https_page_only(alice, settings):
    """Over wss the app's own origin is https (ws → http, wss → https)."""
    settings.ALLOWED_HOSTS = ["chat.example.org"]
    assert await handshake(alice, "https://chat.example.org", host="chat.example.org", scheme="wss")
    assert not await handshake(
        alice, "http://chat.example.org", host="chat.example.org", scheme="wss"
    )


async def test_a_handshake_without_an_origin_is_refused(alice):
    """No Origin header, no socket (browsers always send one)."""
    assert not await handshake(alice, None)


async def test_a_host_outside_allowed_hosts_is_not_the_apps_origin(alice):
    """A Host the app does not answer to (DNS rebinding) does not make its origin trusted."""
    assert not await handshake(alice, "http://evil.example:8000", host="evil.example:8000")


async def test_configured_origins_are_accepted_exactly(alice, settings):
    """An origin in CSRF_TRUSTED_ORIGINS is accepted; the same host on another port is not."""
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.org"]
    assert await handshake(alice, "https://chat.example.org")
    assert await handshake(alice, "https://chat.example.org:443")
    assert not await handshake(alice, "https://chat.example.org:8443")
    assert not await handshake(alice, "http://chat.example.org")


async def test_subdomain_wildcards_work_as_for_csrf(alice, settings):
    """`https://*.example.org` accepts https pages of its subdomains, nothing else."""
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.org"]
    assert await handshake(alice, "https://chat.example.org")
    assert not await handshake(alice, "http://chat.example.org")
    assert not await handshake(alice, "https://example.org.evil.test")


async def test_behind_a_tls_proxy_the_forwarded_scheme_counts(alice, settings):
    """With SECURE_PROXY_SSL_HEADER set, a proxy's X-Forwarded-Proto: https makes the app's
    origin https; without the header the https page is refused."""
    settings.ALLOWED_HOSTS = ["chat.example.org"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proto = [(b"x-forwarded-proto", b"https")]
    page = "https://chat.example.org"
    assert await handshake(alice, page, host="chat.example.org", extra=proto)
    assert not await handshake(alice, page, host="chat.example.org")
