"""One live app and one scripted model for the MCP endpoint's tests (starting an app takes
several Django processes)."""

from __future__ import annotations

import pytest

from tests.mcp_server.live import start
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="package")
def model():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="package")
def live(model, tmp_path_factory):
    """The app: ai.process waits for the user's approval, and a token's requests a minute
    are not limited (the conformance suite makes many with one)."""
    app = start(
        tmp_path_factory.mktemp("mcp"),
        model.url,
        POWERON_APPROVAL_METHODS="ai.process",
        POWERON_API_REQUESTS_PER_MINUTE="0",
    )
    try:
        yield app
    finally:
        app.processes.stop()
