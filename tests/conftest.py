"""Fixtures shared by the whole suite: users, signed-in clients, a workflow with history."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = (
    ["tests.support.plugin"] if (Path(__file__).parent / "support/plugin.py").exists() else []
)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    """Every test writes files under its own temporary MEDIA_ROOT."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


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
