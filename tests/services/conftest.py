"""The scale-out path runs against the machine's real PostgreSQL and Redis.

Locally a missing server skips these tests; under CI=true it fails them, so CI can never
pass without having exercised the production backends.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator

import psycopg
import pytest

PG_HOST, PG_PORT = os.environ.get("POWERON_TEST_PG", "127.0.0.1:5432").split(":")
REDIS_URL = os.environ.get("POWERON_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def require(name: str, host: str, port: int) -> None:
    """Skip locally, fail under CI, when a service does not answer."""
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError as error:
        message = f"{name} is not reachable at {host}:{port}: {error}"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database, dropped afterwards."""
    require("PostgreSQL", PG_HOST, int(PG_PORT))
    name = f"poweron_test_{uuid.uuid4().hex[:10]}"
    admin = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def redis_url() -> str:
    """The Redis server the channel layer uses (database 15, kept apart from any app data)."""
    host_port = REDIS_URL.split("//")[1].split("/")[0]
    host, port = host_port.split(":")
    require("Redis", host, int(port))
    return REDIS_URL
