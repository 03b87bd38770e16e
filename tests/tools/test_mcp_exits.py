"""Cancellation and interpreter exits are never a server's failure: when one reaches a run's
connection to a real stdio MCP server (tests/support/mcp_server.py), the connection's task
lets it go on instead of saying "MCP server … failed" (a Ctrl+C would otherwise be swallowed,
and the process would not stop). An exit is raised in the task that holds the connection,
where the connection waits for the run to end; it runs in a process of its own, since an
exit leaving the event loop ends the process."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.mcp_servers import stdio_command
from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp.servers import McpServer
from workflows.tools.mcp.sources import McpHub

ROOT = Path(__file__).resolve().parents[2]


class EndsWith(asyncio.Event):
    """The run's end, arriving as `error` in the task that holds a connection."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    async def wait(self) -> bool:
        await super().wait()
        raise self.error


SCRIPT = textwrap.dedent(
    """
    import asyncio, logging, sys
    from tests.support.mcp_servers import stdio_command
    from tests.tools.test_mcp_exits import EndsWith
    from workflows.tools.mcp.servers import McpServer
    from workflows.tools.mcp.sources import McpHub

    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="log: %(message)s")
    error = {"interrupt": KeyboardInterrupt(), "exit": SystemExit(7)}[sys.argv[1]]

    async def main():
        hub = McpHub([McpServer(name="calc", command=tuple(stdio_command()))])
        hub._closing = EndsWith(error)
        tools, unavailable = await hub.catalog()
        print("listed", len(tools), unavailable, flush=True)
        hub._closing.set()  # the connection's task now meets the exit
        await asyncio.sleep(30)
        print("the exit was swallowed", flush=True)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(42)
    """
)


@pytest.mark.parametrize(("kind", "code"), [("interrupt", 42), ("exit", 7)])
def test_an_interpreter_exit_in_a_connection_ends_the_process(kind: str, code: int) -> None:
    """Ctrl+C and SystemExit in the task holding a stdio server's connection leave the event
    loop and end the process, with nothing said of the server."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "listed" in done.stdout and "{}" in done.stdout, done.stdout + done.stderr
    assert done.returncode == code, done.stdout + done.stderr
    assert "swallowed" not in done.stdout
    assert "MCP server calc" not in done.stdout  # neither "failed" nor "closed: …"


async def test_a_cancelled_connection_is_not_a_server_failure(caplog) -> None:
    """A cancellation that reaches the connection's task cancels it; the server's listing
    stays good and nothing is logged against the server."""
    mcp.forget_listings()
    server = McpServer(name="calc", command=tuple(stdio_command()))
    hub = McpHub([server])
    hub._closing = EndsWith(asyncio.CancelledError())
    try:
        with caplog.at_level(logging.INFO, logger="workflows.tools.mcp.sources"):
            tools, unavailable = await hub.catalog()
            assert tools and unavailable == {}
            (holder,) = hub._holders
            hub._closing.set()
            await asyncio.wait([holder], timeout=30)
        assert holder.cancelled()
        assert mcp.last_listing(server).error == ""
        assert not [r for r in caplog.records if "MCP server calc" in r.getMessage()]
    finally:
        await hub.aclose()
        mcp.forget_listings()
