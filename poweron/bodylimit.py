"""Refuse a request body larger than the upload limit before it is read.

Daphne hands a request to the app only once Twisted has received its whole body (into
memory, or a temporary file past 100 kB), so a check in Django or in ASGI middleware comes
after the spooling. `install_daphne_guard` makes Daphne's request answer 413 as soon as the
headers declare too large a body, or a chunked body grows past the limit, and discard the
rest. `BodyLimitMiddleware` does the same for ASGI servers that stream the body to the app.
"""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.template.defaultfilters import filesizeformat

MULTIPART_ALLOWANCE = 64 * 1024
"""Bytes a request may carry beyond the upload limit: multipart boundaries, the form's
other fields and its file names."""

LINGER_SECONDS = 3.0
"""How long a refused connection keeps reading (and discarding) the body, so the client
reads the 413 instead of a reset connection."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Any, Any, Any], Awaitable[None]]
"""Any ASGI app (Django's handler types its scope as a dict and its messages as Mappings,
the MCP SDK's as MutableMappings: the middleware passes them through as they come)."""


def body_limit() -> int:
    """The largest request body accepted, in bytes."""
    return int(settings.POWERON_MAX_UPLOAD_BYTES) + MULTIPART_ALLOWANCE


def refusal_html() -> bytes:
    """The 413 body: the fragment the upload form shows, as the view's own errors are."""
    text = refusal_text()
    return (f'<ul class="upload-errors" role="alert"><li class="error">{text}</li></ul>').encode()


def refusal_text() -> str:
    limit = filesizeformat(settings.POWERON_MAX_UPLOAD_BYTES)
    return f"The upload is too large: at most {limit} in total. Nothing was stored."


def refusal(path: str) -> tuple[bytes, bytes]:
    """The 413's content type and body for a request to `path`: the API's problem details,
    or the upload form's fragment."""
    if not path.startswith("/api/"):
        return b"text/html; charset=utf-8", refusal_html()
    from workflows.api.errors import MEDIA_TYPE, Problem

    problem = Problem("too-large", refusal_text()).document(path)
    return MEDIA_TYPE.encode(), json.dumps(problem, ensure_ascii=False).encode()


def _declared_length(value: bytes | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


class BodyLimitMiddleware:
    """ASGI middleware: 413 before receiving a body whose declared length is too large,
    and as soon as a streamed body grows past the limit."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit()
        headers = dict(scope.get("headers", []))
        declared = _declared_length(headers.get(b"content-length"))
        if declared is not None and declared > limit:
            await _send_refusal(send, scope.get("path", ""))
            return
        received = 0
        responded = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal responded
            responded = True
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not responded:
                await _send_refusal(send, scope.get("path", ""))


class BodyTooLarge(Exception):
    """A streamed request body grew past the limit."""


async def _send_refusal(send: Send, path: str) -> None:
    content_type, body = refusal(path)
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def install_daphne_guard() -> None:
    """Make Daphne's HTTP requests refuse a too large body before spooling it."""
    from daphne import http_protocol

    if issubclass(http_protocol.WebRequest, LimitedMixin):
        return
    http_protocol.WebRequest = type(
        "LimitedWebRequest", (LimitedMixin, http_protocol.WebRequest), {}
    )


class LimitedMixin:
    """Twisted request hooks: the declared length arrives before the body, then each
    chunk of it; a refused request discards both and never reaches the app."""

    channel: Any
    requestHeaders: Any
    content: Any
    _refused = False
    _received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > body_limit():
            self.content = io.BytesIO()  # stays empty: Twisted closes it with the request
            self._refuse()
            return
        super().gotLength(length)  # type: ignore[misc]  # a mixin: Twisted's Request is next

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._received += len(data)
        if self._received > body_limit():
            self.content.close()
            self._refuse()
            return
        super().handleContentChunk(data)  # type: ignore[misc]  # a mixin, as above

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self._refused:
            self.channel.transport.loseConnection()
            return
        # Twisted would parse a form POST's whole body into `args` (a 19 MB upload cost about
        # 170 MB at its peak); Daphne never reads them, Django parses the body as it streams.
        # Set on each request, as Twisted sets it when it makes one.
        self._parsePOSTFormSubmission = False
        super().requestReceived(command, path, version)  # type: ignore[misc]  # as above

    def _refuse(self) -> None:
        from twisted.internet import reactor

        self._refused = True
        # No "100 Continue" after the refusal: the client need not send the body at all.
        self.requestHeaders.removeHeader(b"expect")
        path = getattr(self.channel, "_path", b"").decode("latin-1")  # the request line's
        content_type, body = refusal(path.split("?")[0])
        head = (
            "HTTP/1.1 413 Content Too Large\r\n"
            f"Content-Type: {content_type.decode()}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        transport = self.channel.transport
        transport.write(head + body)
        # zope declares IReactorTime's methods without self: mypy reads the delay as `self`.
        reactor.callLater(LINGER_SECONDS, transport.loseConnection)  # type: ignore[arg-type]
