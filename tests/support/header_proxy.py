"""A reverse proxy on loopback that adds headers to every request it forwards, streaming
the answers back as they come (Server-Sent Events included): what an MCP client configured
with a header does, for a client that cannot be given one (the conformance suite). The
Host and Origin headers pass unchanged, so the app checks what the client sent."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import uvicorn

from tests.support.apps import free_port

HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"te", b"upgrade", b"trailer"}


class HeaderProxy:
    """`with HeaderProxy(upstream, {"Authorization": "Bearer …"}) as proxy:` → proxy.url."""

    def __init__(self, upstream: str, headers: dict[str, str]) -> None:
        self.upstream = upstream.rstrip("/")
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        self.port = free_port()
        config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            interface="asgi3",
            # Longer than any client keeps an idle connection: uvicorn's 5 s default closed
            # connections the suite's client was about to reuse ("fetch failed").
            timeout_keep_alive=300,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HeaderProxy:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    async def app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        names = {name for name, _ in self.headers}
        headers = [(k, v) for k, v in scope["headers"] if k not in names and k not in HOP_BY_HOP]
        target = self.upstream + scope["raw_path"].decode()
        if scope.get("query_string"):
            target += "?" + scope["query_string"].decode()
        if self.client is None:  # made in the proxy's own loop; its connections are reused
            self.client = httpx.AsyncClient(timeout=None, trust_env=False)
        request = self.client.build_request(
            scope["method"], target, headers=headers + self.headers, content=body
        )
        response = await self.client.send(request, stream=True)
        try:
            await self.relay(response, receive, send)
        finally:
            await response.aclose()

    async def lifespan(self, receive: Any, send: Any) -> None:
        """Close the upstream connections when the proxy stops."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.client is not None:
                    await self.client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def relay(self, response: httpx.Response, receive: Any, send: Any) -> None:
        """Send the upstream answer on as it comes; stop when the client goes away."""
        head = [(k, v) for k, v in response.headers.raw if k.lower() not in HOP_BY_HOP]
        await send({"type": "http.response.start", "status": response.status_code, "headers": head})

        async def pipe() -> None:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        piping, leaving = asyncio.ensure_future(pipe()), asyncio.ensure_future(gone())
        await asyncio.wait([piping, leaving], return_when=asyncio.FIRST_COMPLETED)
        for task in (piping, leaving):
            task.cancel()
        await asyncio.gather(piping, leaving, return_exceptions=True)
        if piping.done() and not piping.cancelled() and piping.exception() is None:
            await send({"type": "http.response.body", "body": b""})
