"""An MCP server for the tests, written with the official SDK: the same tools over stdio
(`python mcp_server.py stdio`) or streamable HTTP on loopback (`python mcp_server.py http PORT
[--token T]`, which then wants `Authorization: Bearer T`). `--extra N` adds N more tools of
varied subjects, for catalogs of realistic size.

Tools: add (structured result), city_facts (text), chart (an image), fail (the server reports
an error), slow (sleeps), echo_env (the value of an environment variable given to the server).
"""

from __future__ import annotations

import argparse
import base64
import os
import time

from mcp.server.mcpserver import MCPServer

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
CITIES = {
    "Oslo": "Oslo is the capital of Norway. It lies at the head of the Oslofjord.",
    "Lyon": "Lyon is a city in France, at the confluence of the Rhône and the Saône.",
}
SUBJECTS = [
    ("invoice", "Look up an invoice by its number and return its status and amount."),
    ("weather", "Give the weather forecast for a place and a day."),
    ("ticket", "Open a support ticket with a title and a description."),
    ("calendar", "List the calendar events of a day."),
    ("stock", "Give the latest price of a stock symbol."),
    ("translate", "Translate a short text into another language."),
    ("unit", "Convert a quantity from one unit to another."),
    ("contact", "Find a contact's e-mail address by name."),
    ("shipment", "Track a shipment by its tracking number."),
    ("recipe", "Find a recipe by its main ingredient."),
]


def build(extra: int = 0) -> MCPServer:
    server = MCPServer("test-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers and return the sum."""
        return a + b

    @server.tool()
    def city_facts(city: str) -> str:
        """Facts about a city, from the server's own notes."""
        return CITIES.get(city, f"No notes about {city}.")

    @server.tool()
    def chart() -> list:
        """A tiny chart as a PNG image."""
        from mcp.types import ImageContent

        return [
            ImageContent(type="image", data=base64.b64encode(PIXEL).decode(), mime_type="image/png")
        ]

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, with the reason given."""
        raise ValueError(reason)

    @server.tool()
    def slow(seconds: float) -> str:
        """Waits the given number of seconds, then says so."""
        time.sleep(seconds)
        return f"waited {seconds} s"

    @server.tool()
    def echo_env(name: str) -> str:
        """The value of one of the server's environment variables."""
        return os.environ.get(name, "")

    for number in range(extra):
        subject, description = SUBJECTS[number % len(SUBJECTS)]
        register_extra(server, f"{subject}_{number}", description)
    return server


def register_extra(server: MCPServer, name: str, description: str) -> None:
    def tool(query: str, limit: int = 5) -> str:
        return f"{name}: {limit} results for {query}"

    tool.__name__ = name
    tool.__doc__ = description
    server.tool(name=name, description=description)(tool)


def serve_http(server: MCPServer, port: int, token: str, allow_host: str = "") -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.responses import PlainTextResponse

    security = None  # the SDK's own: Host must be 127.0.0.1 or localhost
    if allow_host:  # a name that stands for this server (its Host header is checked)
        hosts = ["127.0.0.1:*", "localhost:*", f"{allow_host}:*"]
        security = TransportSecuritySettings(allowed_hosts=hosts)
    app = server.streamable_http_app(transport_security=security)
    if token:
        inner = app

        async def app(scope, receive, send):  # type: ignore[no-redef]
            headers = dict(scope.get("headers") or [])
            if (
                scope["type"] == "http"
                and headers.get(b"authorization") != f"Bearer {token}".encode()
            ):
                await PlainTextResponse("unauthorised", status_code=401)(scope, receive, send)
                return
            await inner(scope, receive, send)

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--token", default="")
    parser.add_argument("--extra", type=int, default=0)
    parser.add_argument("--allow-host", default="")
    args = parser.parse_args()
    mcp = build(args.extra)
    if args.transport == "stdio":
        mcp.run()
    else:
        serve_http(mcp, args.port, args.token, args.allow_host)
