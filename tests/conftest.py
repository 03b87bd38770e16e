"""Fixtures shared by the whole suite: users, signed-in clients, a workflow with history."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = (
    ["tests.support.plugin"] if (Path(__file__).parent / "support/plugin.py").exists() else []
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Every test writes files under its own temporary MEDIA_ROOT, and keeps the durable-run
    checkpoints in its own SQLite file."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.POWERON_DBOS_DATABASE_URL = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    settings.POWERON_QUEUE_POLL_SECONDS = 0.1
    return settings.MEDIA_ROOT


@pytest.fixture
async def durable(media_root):
    """DBOS launched in the test's event loop on a fresh system database, as Daphne does."""
    from dbos import DBOS

    from workflows.execution import durable as runs
    from workflows.execution import runner

    assert runner.round_workflow  # registered before DBOS launches

    await runs.launch()
    try:
        yield runs
    finally:
        await settled_rounds(runs)
        DBOS.destroy()


async def settled_rounds(runs) -> None:
    """Let DBOS record the end of every round this test started (a round ends in our database
    a moment before DBOS records it); stop any still running, as a process stop does."""
    import asyncio

    from dbos import DBOS

    for _ in range(100):
        if not await DBOS.list_workflows_async(status=["PENDING", "ENQUEUED"]):
            return
        await asyncio.sleep(0.05)
    for runner in list(runs.RUNNERS.values()):
        runner.stop()
        await asyncio.wait([runner.task], timeout=5)


@pytest.fixture
def model(fake_openai, settings):
    """The app talks to the fake model server through the real openai client (modules with
    a model of their own define their own `model`)."""
    settings.POWERON_LLM_BASE_URL = fake_openai.url
    settings.POWERON_LLM_API_KEY = "sk-test-not-real"
    return fake_openai


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(username="alice", password="alice-pass-123")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(username="bob", password="bob-pass-123")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
