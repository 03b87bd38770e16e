"""A real Daphne for the MCP endpoint's tests: alice and bob, each signed in over HTTP and
with personal API tokens made on the tokens page, and the official `mcp` client connected
with a token, as a desktop client configured with an Authorization header connects."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.api.live_app import make_token
from tests.support.apps import PASSWORD, AppProcesses, app_env

SLOW = 120.0
"""Generous waits: the machine may be busy."""


def sign_in(browser: httpx.Client, username: str) -> None:
    login = browser.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
    data = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf}
    assert browser.post("/login/", data=data).status_code == 302


@dataclass
class User:
    """A user of the live app with a token per scope set ("read", "run", "read+run")."""

    name: str
    tokens: dict[str, str] = field(default_factory=dict)


@dataclass
class LiveApp:
    processes: AppProcesses
    base: str
    alice: User
    bob: User

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def api(self, token: str) -> httpx.Client:
        """The HTTP API with `token`."""
        return httpx.Client(
            base_url=f"{self.base}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=SLOW,
        )


def start(tmp_path: Path, model_url: str, **env: str) -> LiveApp:
    """Daphne on its own database, with alice and bob and their tokens."""
    processes = AppProcesses(app_env(tmp_path, model_url, **env), tmp_path)
    processes.manage("createsuperuser", "--noinput", "--username", "bob", "--email", "b@b.org")
    base = f"http://127.0.0.1:{processes.web()}"
    users = []
    for name in ("alice", "bob"):
        user = User(name)
        with httpx.Client(base_url=base, timeout=SLOW) as browser:
            sign_in(browser, name)
            for scopes in (["read"], ["run"], ["read", "run"]):
                user.tokens["+".join(scopes)] = make_token(browser, scopes)
        users.append(user)
    return LiveApp(processes, base, *users)


@asynccontextmanager
async def connected(url: str, token: str, **options: Any) -> AsyncIterator[Client]:
    """The official client on the streamable HTTP transport, sending `token`."""
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(SLOW, read=SLOW * 2),
        trust_env=False,
    )
    async with http, Client(streamable_http_client(url, http_client=http), **options) as client:
        yield client
