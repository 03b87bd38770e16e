"""The API of a real Daphne for tests: alice signed in over HTTP, and her personal API tokens
made on the API tokens page, as a person makes them."""

from __future__ import annotations

import re

import httpx

from tests.support.apps import PASSWORD

TOKEN = re.compile(r"pon_[a-z0-9]{10}_[A-Za-z0-9_-]+")


def sign_in(browser: httpx.Client) -> None:
    """Sign `browser` in as alice (the superuser of every AppProcesses database)."""
    login = browser.get("/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
    data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": csrf}
    assert browser.post("/login/", data=data).status_code == 302


def make_token(browser: httpx.Client, scopes: list[str]) -> str:
    """A new token of the signed-in user with `scopes`, as the page shows it once."""
    page = browser.get("/tokens/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    data = {
        "name": "+".join(scopes),
        "scopes": scopes,
        "expires_in": "",
        "csrfmiddlewaretoken": csrf,
    }
    made = browser.post("/tokens/", data=data)
    return TOKEN.search(made.text)[0]


def alice_token(base: str, scopes: list[str]) -> str:
    """A token of alice's with `scopes`, made on the app at `base`."""
    with httpx.Client(base_url=base, timeout=60) as browser:
        sign_in(browser)
        return make_token(browser, scopes)
