"""What the runs need of DBOS that it offers no public way to do, in this one place.

Everything else uses DBOS's public names (`dbos.DBOS`, `dbos.error`, ...). The two reads
below are of private names: dbos is pinned in pyproject.toml, and tests/test_dbos_api.py
fails when an upgrade drops or moves them (and when any other module reads a private name),
so an upgrade breaks a test, not a run.
"""

from __future__ import annotations

from dbos import DBOS


def is_launched() -> bool:
    """Whether DBOS runs in this process now (launched, not destroyed since): DBOS's private
    global instance and its launch flag (no public way to ask)."""
    from dbos import _dbos

    instance = _dbos._dbos_global_instance
    return instance is not None and instance._launched


def recover_pending(executor_ids: list[str]) -> None:
    """Put the pending runs of these executors (processes that died) back on their queues,
    for a live process to take: DBOS's own recovery, which it runs at launch for its own
    executor only and otherwise leaves to its commercial Conductor (no public call)."""
    DBOS._recover_pending_workflows(executor_ids)
