"""What the API's tests share: tokens of every scope, and clients that send them."""

from __future__ import annotations

import pytest
from django.test import AsyncClient, Client

from workflows.api import tokens


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def make_token(user, *scopes: str, **fields) -> str:
    """A new token of `user` with `scopes` (read and run by default); its secret."""
    made = tokens.token_create(
        owner=user,
        name=fields.pop("name", "test"),
        scopes=list(scopes or ("read", "run")),
        expires=fields.pop("expires", None),
    )
    return made.secret


@pytest.fixture
def alice_token(alice) -> str:
    return make_token(alice)


@pytest.fixture
def api(alice_token) -> Client:
    """alice's program: a client that sends her read-and-run token."""
    return Client(headers=bearer(alice_token))


class BearerAsyncClient(AsyncClient):
    """An AsyncClient that sends a bearer token with every request (the constructor's
    `headers` reach an ASGI request under their WSGI names, which it drops)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def generic(self, method, path, *args, headers=None, **extra):
        headers = {**bearer(self.token), **(headers or {})}
        return super().generic(method, path, *args, headers=headers, **extra)


@pytest.fixture
def async_api(alice_token) -> AsyncClient:
    """alice's program, for async tests (whose rounds run in the test's event loop)."""
    return BearerAsyncClient(alice_token)


@pytest.fixture
def bob_api(bob) -> Client:
    return Client(headers=bearer(make_token(bob)))
