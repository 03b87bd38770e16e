"""A real Daphne for the MCP endpoint's tests: alice and bob with personal API tokens of
each scope, and the official `mcp` client connected
with a token, as a desktop client configured with an Authorization header connects.

One app serves the package's tests (conftest.py): ai.process waits for approval, and a
token's requests a minute are not limited (the conformance suite makes many)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.apps import PASSWORD, ROOT, AppProcesses, app_env

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


SETUP = """
import json
from django.contrib.auth import get_user_model
from workflows.api import tokens

User = get_user_model()
bob = User.objects.create_user("bob", "b@b.org", PASSWORD)
made = {}
for user in (User.objects.get(username="alice"), bob):
    made[user.username] = {
        "+".join(scopes): tokens.token_create(
            owner=user, name="+".join(scopes), scopes=scopes, expires=None
        ).secret
        for scopes in (["read"], ["run"], ["read", "run"])
    }
print(json.dumps(made))
"""


def start(tmp_path: Path, model_url: str, **env: str) -> LiveApp:
    """Daphne on its own database, with alice and bob and their tokens (made in one Django
    process before Daphne starts: on a busy machine every process start counts)."""
    processes = AppProcesses(app_env(tmp_path, model_url, **env), tmp_path)
    setup = f"PASSWORD = {PASSWORD!r}\n{SETUP}"
    made = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", setup],
        cwd=ROOT,
        env=processes.env,
        check=True,
        capture_output=True,
        text=True,
    )
    tokens = json.loads(made.stdout.strip().splitlines()[-1])
    base = f"http://127.0.0.1:{processes.web()}"
    return LiveApp(processes, base, User("alice", tokens["alice"]), User("bob", tokens["bob"]))


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
