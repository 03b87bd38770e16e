"""A real Daphne for the AG-UI tests: alice's and bob's tokens made on the tokens page, their
workflows and uploads made through the HTTP API, and the endpoint's streams read as they
come."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.agui.protocol import event_of
from tests.api.live_app import TOKEN
from tests.api.sse import Parser
from tests.support.apps import PASSWORD, AppProcesses
from tests.support.chat_app import NOTE

ENDPOINT = "/api/v1/agui"
BOB_PASSWORD = "bob-pass-456"
SCOPES = {"all": ["read", "run"], "read": ["read"], "run": ["run"]}


def sign_in(browser: httpx.Client, username: str, password: str) -> None:
    login = browser.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
    data = {"username": username, "password": password, "csrfmiddlewaretoken": csrf}
    assert browser.post("/login/", data=data).status_code == 302


def make_token(browser: httpx.Client, scopes: list[str]) -> str:
    """A token of the signed-in user, made on the tokens page as a person does."""
    page = browser.get("/tokens/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    data = {"name": "+".join(scopes), "scopes": scopes, "expires_in": "",
            "csrfmiddlewaretoken": csrf}  # fmt: skip
    return TOKEN.search(browser.post("/tokens/", data=data).text)[0]


@dataclass
class User:
    """A user of the live app: tokens by scope ("all" has read and run)."""

    name: str
    password: str
    tokens: dict[str, str] = field(default_factory=dict)


@dataclass
class LiveApp:
    base: str
    alice: User
    bob: User

    def api(self, user: User) -> httpx.Client:
        """The HTTP API as `user`'s program (read and run)."""
        headers = {"Authorization": f"Bearer {user.tokens['all']}"}
        return httpx.Client(base_url=f"{self.base}/api/v1", headers=headers, timeout=30)

    def workflow(self, user: User, *, max_steps: int | None = None) -> tuple[int, int]:
        """A new workflow of `user` holding the notes upload: its id and the upload's."""
        with self.api(user) as api:
            fields = {"title": "AG-UI"} | ({"maxSteps": max_steps} if max_steps else {})
            created = api.post("/workflows", json=fields)
            assert created.status_code == 201, created.text
            workflow = created.json()["id"]
            files = {"files": ("notes.md", NOTE, "text/markdown")}
            uploaded = api.post(f"/workflows/{workflow}/uploads", files=files)
            assert uploaded.status_code == 201, uploaded.text
            return workflow, uploaded.json()["documents"][0]["id"]

    def stored(self, user: User, workflow: int) -> tuple[list[dict], list[dict]]:
        """The workflow's stored events and messages."""
        events: list[dict] = []
        with self.api(user) as api:
            page = {"next": 0, "more": True}
            while page["more"]:
                query = {"after": page["next"], "limit": 500}
                page = api.get(f"/workflows/{workflow}/events", params=query).json()
                events += page["events"]
            messages = api.get(f"/workflows/{workflow}/messages").json()
        return events, messages["messages"]

    def post(
        self, token: str, body: dict[str, Any], **headers: str
    ) -> tuple[httpx.Response, list[dict]]:
        """One AG-UI request, read to its end: the response and its events (none when it
        was refused)."""
        with self.stream(token, body, **headers) as (response, events):
            return response, list(events)

    @contextmanager
    def stream(
        self, token: str, body: dict[str, Any], **headers: str
    ) -> Iterator[tuple[httpx.Response, Iterator[dict]]]:
        """One AG-UI request whose events are read as they come (leaving the block closes
        the connection)."""
        headers = {"Authorization": f"Bearer {token}", **headers} if token else headers
        timeout = httpx.Timeout(60, connect=10)
        with (
            httpx.Client(base_url=self.base, timeout=timeout) as client,
            client.stream("POST", ENDPOINT, json=body, headers=headers) as response,
        ):
            if response.status_code != 200:
                response.read()
                yield response, iter(())
                return

            def events() -> Iterator[dict]:
                parser = Parser()
                for text in response.iter_text():
                    for sse in parser.feed(text):
                        if (event := event_of(sse)) is not None:
                            yield event

            yield response, events()


def start_app(env: dict[str, str], tmp_path) -> tuple[AppProcesses, LiveApp]:
    """The app with alice (a superuser) and bob, each with tokens of every scope."""
    processes = AppProcesses(env, tmp_path)
    try:
        create_bob = (
            "from django.contrib.auth import get_user_model; "
            f"get_user_model().objects.create_user('bob', password='{BOB_PASSWORD}')"
        )
        processes.manage("shell", "-c", create_bob)
        base = f"http://127.0.0.1:{processes.web()}"
        users = [User("alice", PASSWORD), User("bob", BOB_PASSWORD)]
        for user in users:
            with httpx.Client(base_url=base, timeout=30) as browser:
                sign_in(browser, user.name, user.password)
                for name, scopes in SCOPES.items():
                    user.tokens[name] = make_token(browser, scopes)
    except BaseException:
        processes.stop()
        raise
    return processes, LiveApp(base, *users)


def as_alice(app: LiveApp, *paths: str) -> list[str]:
    """Pages of the app as alice (a superuser) sees them, signed in."""
    with httpx.Client(base_url=app.base, timeout=30) as browser:
        sign_in(browser, "alice", PASSWORD)
        return [browser.get(path).text for path in paths]
