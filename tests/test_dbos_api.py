"""The DBOS names the runs rely on exist in the installed DBOS: the public ones the runner and
the commands import, and the one private name read where DBOS has no public equivalent
(`durable.is_launched`). An upgrade that drops or moves one fails here, not in a run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from dbos import DBOS
from dbos import error as dbos_error

from workflows.execution import durable as runs

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"


def test_the_errors_the_runs_catch_are_public() -> None:
    """The errors caught by the runner and the commands are in DBOS's public `error`."""
    for name in (
        "DBOSWorkflowCancelledError",
        "DBOSWorkflowConflictIDError",
        "DBOSAwaitedWorkflowCancelledError",
    ):
        assert issubclass(getattr(dbos_error, name), Exception), name


def test_the_private_global_instance_is_still_there() -> None:
    """is_launched reads DBOS's private global instance and its `_launched` flag: both must
    still exist under these names."""
    from dbos import _dbos

    assert hasattr(_dbos, "_dbos_global_instance")
    source = Path(_dbos.__file__).read_text()
    assert "self._launched" in source


@pytest.mark.django_db(transaction=True)
async def test_is_launched_follows_a_launch_and_a_destroy(media_root) -> None:
    """Not launched before, launched after DBOS.launch, not launched after a destroy."""
    from workflows.execution import runner

    assert runner.round_workflow  # registered before DBOS launches
    assert not runs.is_launched()
    await runs.launch()
    try:
        assert runs.is_launched()
    finally:
        DBOS.destroy()
    assert not runs.is_launched()


def test_only_one_module_reads_a_private_dbos_name() -> None:
    """No import of `dbos._…` outside durable.is_launched, the one place with no public
    equivalent."""
    readers = []
    for path in WORKFLOWS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n.startswith("dbos._") for n in names):
                readers.append(path.relative_to(WORKFLOWS).as_posix())
    assert readers == ["execution/durable.py"]
