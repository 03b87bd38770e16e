"""Temporary databases on the local PostgreSQL (127.0.0.1:5432, trust auth) for benchmarks."""

from __future__ import annotations

import uuid

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def create_database(prefix: str = "poweron_bench") -> str:
    """A fresh, empty database; raises when the server does not answer."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=5) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return name


def optional_database() -> str | None:
    """A fresh database, or None (said once) when PostgreSQL does not answer: the bench then
    leaves its PostgreSQL figures out."""
    try:
        return create_database()
    except Exception as error:
        print(f"(PostgreSQL left out: it did not answer on 127.0.0.1:5432: {error})")
        return None


def drop_database(name: str) -> None:
    """Drop a database made here, whoever is still connected to it."""
    import psycopg

    with psycopg.connect(PG_ADMIN, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def url_of(name: str) -> str:
    """The connection URL of a database on the local server."""
    return f"postgresql://postgres@127.0.0.1:5432/{name}"
