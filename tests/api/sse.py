"""Reading Server-Sent Events in tests: a parser for the wire format, and a stream through the
real ASGI app in the test's event loop (the app's own handler, middleware and layer)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from channels.testing import ApplicationCommunicator

from poweron.asgi import application


@dataclass
class Event:
    """One SSE event as a client sees it, or a comment line (`comment`)."""

    id: str | None = None
    event: str = "message"
    data: str = ""
    retry: int | None = None
    comment: str | None = None

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.data)


@dataclass
class Parser:
    """The SSE wire format, fed in pieces as they arrive."""

    pending: str = ""
    current: dict[str, Any] = field(default_factory=dict)

    def feed(self, text: str) -> list[Event]:
        self.pending += text
        found = []
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            if not line:
                if self.current:
                    found.append(Event(**self.current))
                self.current = {}
            elif line.startswith(":"):
                found.append(Event(comment=line[1:].strip()))
            else:
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    joined = self.current.get("data")
                    self.current["data"] = value if joined is None else f"{joined}\n{value}"
                elif name == "retry":
                    self.current["retry"] = int(value)
                elif name in ("id", "event"):
                    self.current[name] = value
        return found


class AsgiStream:
    """A request through the ASGI app, as Daphne hands it over (each request in a context
    of its own), whose answer is read as it streams (a GET by default)."""

    def __init__(
        self,
        path: str,
        headers: dict[str, str] | None = None,
        *,
        method: str = "GET",
        body: bytes = b"",
    ) -> None:
        parts = urlsplit(path)
        self.request_body = body
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": parts.path,
            "raw_path": parts.path.encode(),
            "query_string": parts.query.encode(),
            "headers": [(b"host", b"testserver")]
            + [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self.communicator = ApplicationCommunicator(application, scope)
        self.parser = Parser()
        self.events: list[Event] = []
        self.ended = False

    async def open(self, timeout: float = 120) -> tuple[int, dict[str, str]]:
        """Send the request; the answer's status and headers."""
        await self.communicator.send_input({"type": "http.request", "body": self.request_body})
        start = await self.communicator.receive_output(timeout)
        assert start["type"] == "http.response.start", start
        headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
        return start["status"], headers

    async def body(self, timeout: float = 120) -> bytes:
        """The whole body of an answer that ends (a refusal)."""
        data = b""
        while True:
            message = await self.communicator.receive_output(timeout)
            data += message.get("body", b"")
            if not message.get("more_body"):
                await self.communicator.wait(timeout)  # the app has ended, its files closed
                return data

    async def next(self, timeout: float = 60) -> Event:
        """The next event or comment; raises EOFError once the stream has ended."""
        while not self.events:
            if self.ended:
                await self.communicator.wait(timeout)  # the app has ended, its files closed
                raise EOFError("the stream ended")
            message = await self.communicator.receive_output(timeout)
            self.events += self.parser.feed(message.get("body", b"").decode())
            self.ended = not message.get("more_body")
        return self.events.pop(0)

    async def until(self, predicate, timeout: float = 120) -> list[Event]:
        """Every event (not comments) up to and including the first matching `predicate`."""
        found = []
        async with asyncio.timeout(timeout):
            while True:
                event = await self.next(timeout)
                if event.comment is not None or not event.data:
                    continue
                found.append(event)
                if predicate(event):
                    return found

    async def disconnect(self) -> None:
        """The client goes away."""
        await self.communicator.send_input({"type": "http.disconnect"})
        await self.communicator.wait(timeout=60)


def is_final(event: Event) -> bool:
    data = event.json
    return data["type"] == "run" and data["payload"]["status"] in ("completed", "failed", "stopped")


class HttpStream:
    """An event stream read over HTTP from a real server, as it arrives."""

    def __init__(self, client: httpx.AsyncClient, url: str, **headers: str) -> None:
        self.client = client
        self.url = url
        self.headers = headers
        self.parser = Parser()
        self.events: list[Event] = []

    async def __aenter__(self) -> HttpStream:
        self.context = self.client.stream("GET", self.url, headers=self.headers)
        self.response = await self.context.__aenter__()
        self.chunks = self.response.aiter_text()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.context.__aexit__(*exc_info)

    async def next(self) -> Event:
        """The next event or comment; raises EOFError once the stream has ended."""
        while not self.events:
            try:
                self.events += self.parser.feed(await anext(self.chunks))
            except StopAsyncIteration:
                raise EOFError("the stream ended") from None
        return self.events.pop(0)

    async def until(self, predicate, timeout: float = 120) -> list[Event]:
        """Every event (not comments or the retry line) up to and including the first
        matching `predicate`."""
        found = []
        async with asyncio.timeout(timeout):
            while True:
                event = await self.next()
                if event.comment is not None or not event.data:
                    continue
                found.append(event)
                if predicate(event):
                    return found
