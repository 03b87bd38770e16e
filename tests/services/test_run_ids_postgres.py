"""On PostgreSQL with the run state in a database of its own (`POWERON_DBOS_DATABASE_URL`),
an app database started afresh runs its new rounds for real: the run state of the database
before it, which kept a finished first round of its workflow 1, is never taken for theirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tests.services.conftest import PG_HOST, PG_PORT, require
from tests.support.cli import manage, run_workflow

pytestmark = pytest.mark.services

ADMIN = f"postgresql://postgres@{PG_HOST}:{PG_PORT}/postgres"


def create(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')


def drop(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def databases() -> Iterator[tuple[str, str]]:
    """An app database and a run state database, both fresh; dropped afterwards."""
    require("PostgreSQL", PG_HOST, int(PG_PORT))
    names = [f"poweron_test_{kind}_{uuid.uuid4().hex[:8]}" for kind in ("app", "runs")]
    for name in names:
        create(name)
    try:
        yield names[0], names[1]
    finally:
        for name in names:
            drop(name)


def test_an_app_database_started_afresh_runs_its_rounds_for_real(databases, tmp_path):
    """Round 1 of workflow 1 runs again, for real, after the app database was dropped and
    created anew while the run state database kept everything."""
    app, runs = databases
    settings = {
        "DATABASE_URL": f"postgres://postgres@{PG_HOST}:{PG_PORT}/{app}",
        "POWERON_DBOS_DATABASE_URL": f"postgresql://postgres@{PG_HOST}:{PG_PORT}/{runs}",
    }
    var_dir = tmp_path / "var"
    assert manage(var_dir, "migrate", "--no-input", "-v", "0", settings=settings).returncode == 0
    # Notes for the demo model to read (without a document it says it cannot answer).
    sums, rivers = tmp_path / "sums.txt", tmp_path / "rivers.txt"
    sums.write_text("Two and two make four. Three and three make six.", encoding="utf-8")
    rivers.write_text("Rivers run to the sea. Their water is fresh.", encoding="utf-8")
    first = run_workflow(var_dir, "Summarise the note.", "--document", str(sums), settings=settings)
    assert first.returncode == 0, first.explain()

    drop(app)
    create(app)
    assert manage(var_dir, "migrate", "--no-input", "-v", "0", settings=settings).returncode == 0
    second = run_workflow(
        var_dir, "Summarise the note.", "--document", str(rivers), settings=settings
    )

    assert second.returncode == 0, second.explain()
    assert second.workflow == first.workflow
    assert second.of("taskplan"), second.explain()  # the loop ran
    assert [e["payload"]["status"] for e in second.of("run")][-1] == "completed"
    assert second.answer and second.answer != first.answer
