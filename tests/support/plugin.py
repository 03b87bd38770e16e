"""pytest plugin: no test reaches the network or a real model; a fake model server on demand.

Listed in tests/conftest.py as ``pytest_plugins = ["tests.support.plugin"]``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support import netguard
from tests.support.fake_openai import FakeOpenAIServer, Reply

# A closed port: a client that silently falls back to the environment fails at once.
DEAD_BASE_URL = "http://127.0.0.1:9/v1"
FAKE_API_KEY = "sk-test-not-real"
_UNSET = ("POWERON_LLM_BASE_URL", "POWERON_LLM_API_KEY")
_PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def pytest_configure(config: pytest.Config) -> None:
    # Guard collection and session-scoped fixtures too, not only the tests themselves.
    netguard.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    netguard.uninstall()


@pytest.fixture(autouse=True)
def _network_guard() -> Iterator[None]:
    """Every test runs with non-loopback connections refused."""
    with netguard.guarded():
        yield
    _fail_on_stray_attempts()  # those made by fixtures, or by a test that failed anyway


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that passed although it tried to reach the network fails."""
    result = yield
    _fail_on_stray_attempts()
    return result


def _fail_on_stray_attempts() -> None:
    stray = list(netguard.blocked)
    netguard.blocked.clear()
    if stray:
        lines = "\n".join(f"  {attempt.operation} {attempt.address!r}" for attempt in stray)
        pytest.fail(
            "the test tried to reach the network (wrap deliberate attempts in "
            f"netguard.expect_blocked()):\n{lines}",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _no_real_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test can reach a real model by accident: fake key, dead base URL, no LLM config.

    Django settings are read once at startup, so the model settings are also blanked
    there (the app then uses its demo model, unpaced so tests stay quick); a test that
    wants a model sets them itself.
    """
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_API_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD_BASE_URL)
    for name in (*_UNSET, *_PROXIES):
        monkeypatch.delenv(name, raising=False)
    with _blank_django_model_settings():
        yield


def _blank_django_model_settings() -> contextlib.AbstractContextManager[Any]:
    try:
        from django.conf import settings
        from django.test import override_settings
    except ImportError:
        return contextlib.nullcontext()
    if not settings.configured:
        return contextlib.nullcontext()
    return override_settings(**dict.fromkeys(_UNSET, ""), POWERON_DEMO_DELAY_MS=0)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running fake model server with an empty script; add replies with `.add()`."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai_factory() -> Iterator[Callable[..., FakeOpenAIServer]]:
    """Start fake model servers with options, e.g. ``factory(["hi"], reject_json_schema=True)``.

    Every server it starts is stopped when the test ends.
    """
    servers: list[FakeOpenAIServer] = []

    def start(replies: tuple[Reply, ...] | list[Reply] = (), **options: Any) -> FakeOpenAIServer:
        server = FakeOpenAIServer(replies, **options).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
