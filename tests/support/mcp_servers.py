"""The tests' MCP servers as running processes: stdio commands and loopback HTTP servers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.apps import free_port, wait_for_port

SCRIPT = Path(__file__).with_name("mcp_server.py")


def stdio_command(*extra: str) -> list[str]:
    """The command that serves the test tools over stdio."""
    return [sys.executable, str(SCRIPT), "stdio", *extra]


@contextmanager
def http_server(*, token: str = "", extra: int = 0, allow_host: str = "") -> Iterator[str]:
    """Serve the test tools over streamable HTTP on loopback; yields the endpoint URL
    (`allow_host`: a name the server also answers to in the Host header)."""
    port = free_port()
    command = [sys.executable, str(SCRIPT), "http", str(port), "--extra", str(extra)]
    if token:
        command += ["--token", token]
    if allow_host:
        command += ["--allow-host", allow_host]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
