"""The DBOS names the runs rely on exist in the installed DBOS: the public ones the runner and
the commands use, and the private ones read in execution/dbos_internals.py, the one place
for what DBOS offers no public way to do. An upgrade that drops or moves one fails here, not
in a run."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
from dbos import DBOS
from dbos import error as dbos_error

from workflows.execution import dbos_internals, durable

WORKFLOWS = Path(__file__).resolve().parent.parent / "workflows"


def test_the_errors_the_runs_catch_are_public() -> None:
    """The errors caught by the runner and the commands are in DBOS's public `error`."""
    for name in (
        "DBOSWorkflowCancelledError",
        "DBOSWorkflowConflictIDError",
        "DBOSAwaitedWorkflowCancelledError",
    ):
        assert issubclass(getattr(dbos_error, name), BaseException), name


def test_the_private_names_read_are_still_there() -> None:
    """is_launched reads DBOS's global instance and its `_launched` flag; recover_pending
    calls DBOS's recovery of other executors' pending runs, by their ids."""
    from dbos import _dbos

    assert hasattr(_dbos, "_dbos_global_instance")
    assert "self._launched" in Path(_dbos.__file__).read_text()
    recover = DBOS._recover_pending_workflows
    assert list(inspect.signature(recover).parameters) == ["executor_ids"]


@pytest.mark.django_db(transaction=True)
async def test_is_launched_follows_a_launch_and_a_destroy(media_root) -> None:
    """Not launched before, launched after DBOS.launch, not launched after a destroy."""
    from workflows.execution import runner

    assert runner.round_workflow  # registered before DBOS launches
    assert not dbos_internals.is_launched()
    await durable.launch()
    try:
        assert dbos_internals.is_launched()
        dbos_internals.recover_pending(["an-executor-that-never-ran"])  # nothing to recover
    finally:
        DBOS.destroy()
    assert not dbos_internals.is_launched()


def private_reads(tree: ast.AST) -> bool:
    """Whether a module imports a `dbos._…` module or reads a `DBOS._…` member."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = [f"{node.value.id}.{node.attr}"]
        if any(n.startswith(("dbos._", "DBOS._")) for n in names):
            return True
    return False


def test_only_one_module_reads_a_private_dbos_name() -> None:
    """No module but dbos_internals imports a `dbos._…` module or reads a `DBOS._…` member."""
    readers = [
        path.relative_to(WORKFLOWS).as_posix()
        for path in WORKFLOWS.rglob("*.py")
        if private_reads(ast.parse(path.read_text()))
    ]
    assert readers == ["execution/dbos_internals.py"]
