"""Durable runs on DBOS Transact: configuration, launch, ids, states and cancellation.

Every round is a DBOS workflow whose model calls, tool actions and document writes are
checkpointed steps (see `checkpoints.py`). The system database is SQLite under `var/` by
default and PostgreSQL (in its own schema of the app's database) in production. A process
that starts recovers the runs it was running when it stopped; a process that finds another
one's runs without a heartbeat for `POWERON_FAILOVER_SECONDS` takes them over
(`failover.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from dbos import DBOS, DBOSClient, DBOSPortableJSONSerializer, SetWorkflowID
from dbos import error as dbos_error
from django.conf import settings
from django.utils import timezone

from workflows.models import ChatWorkflow, Installation

from . import dbos_internals, setup

logger = logging.getLogger(__name__)

PORTABLE_JSON = DBOSPortableJSONSerializer()
"""How step results and arguments are stored: JSON, never pickles."""

ROUNDS_QUEUE = "poweron-rounds"
"""Where worker-mode rounds wait for a `run_workers` process: named in `launch(queues=…)`, it
stands for this app database's own queue (`rounds_queue()`) and the shared one that rounds
enqueued before run ids existed wait on."""
RESUMABLE = ("PENDING", "ENQUEUED", "DELAYED")
"""DBOS states of a run that will still run: never settle it."""

INSTALLATION = ""
"""A short form of this app database's identity, read when DBOS launches in this process."""
EXECUTOR = ""
"""This process's name in DBOS once launched: its executor id qualified by the installation."""

RUNNERS: dict[str, Any] = {}
"""The runner of each round this process executes (by DBOS workflow id), to stop it at once."""


def system_database_url(database: Mapping[str, Any] | None = None) -> str:
    """Where DBOS keeps its checkpoints: POWERON_DBOS_DATABASE_URL, else PostgreSQL's app
    database (own schema) when the app runs on it, else a SQLite file beside the app's
    (`database`: the app's database settings, the default one's when not given)."""
    if settings.POWERON_DBOS_DATABASE_URL:
        return settings.POWERON_DBOS_DATABASE_URL
    app: Mapping[str, Any] = database or settings.DATABASES["default"]
    if app["ENGINE"].endswith("postgresql"):
        from sqlalchemy.engine import URL  # DBOS's own dependency

        options = app.get("OPTIONS") or {}
        url = URL.create(
            "postgresql",
            username=app.get("USER") or None,
            password=app.get("PASSWORD") or None,  # quoted as a URL needs it
            host=app.get("HOST") or "localhost",
            port=int(app.get("PORT") or 5432),
            database=app["NAME"],
            query={k: str(v) for k, v in options.items() if isinstance(v, str | int)},
        )
        return url.render_as_string(hide_password=False)
    return f"sqlite:///{sqlite_run_state(Path(app['NAME']))}"


def sqlite_run_state(app_database: Path) -> Path:
    """The run state of a SQLite app database: a file beside it named after it
    (`db.sqlite3` → `db.sqlite3-dbos.sqlite`), so that the two are reset, copied and
    switched together. An install from before keeps its `dbos.sqlite` while it has one."""
    earlier = Path(settings.VAR_DIR) / "dbos.sqlite"
    paired = app_database.with_name(f"{app_database.name}-dbos.sqlite")
    default = app_database == Path(settings.VAR_DIR) / "db.sqlite3"
    return earlier if default and earlier.exists() and not paired.exists() else paired


def redacted_url(url: str) -> str:
    """A database URL to log: its password masked."""
    if url.startswith("sqlite"):
        return url
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def config(*, executor_id: str | None = None) -> dict[str, Any]:
    """The DBOS configuration of this process."""
    url = system_database_url()
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as connection:  # WAL: 2.8 vs 4.1 ms per checkpoint
            connection.execute("PRAGMA journal_mode=WAL")
    return {
        "name": "poweron",
        "system_database_url": url,
        "dbos_system_schema": "dbos",
        "application_version": settings.POWERON_APP_VERSION,
        "executor_id": executor_id or settings.POWERON_EXECUTOR_ID,
        "serializer": PORTABLE_JSON,  # step results are JSON, never pickles
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.1,  # SQLite answers within 0.1 s
    }


async def launch(*, queues: Iterable[str] | None = None, executor_id: str | None = None) -> None:
    """Start DBOS in the running event loop (recovered runs resume in it). `queues` are the
    queues this process executes (None: every queue; web processes in worker mode: none;
    `ROUNDS_QUEUE` stands for this database's rounds). The process's executor id is
    qualified by the app database's identity, so DBOS recovers only this database's runs.
    The round workflow must be registered first: import `runner` before calling this."""
    global INSTALLATION, EXECUTOR
    INSTALLATION = (await sync_to_async(Installation.current)()).key.hex[:12]
    plain = executor_id or settings.POWERON_EXECUTOR_ID
    EXECUTOR = f"{plain}@{INSTALLATION}"
    # Ignored for mypy below: DBOSConfig is a TypedDict the helper fills.
    DBOS(config=config(executor_id=EXECUTOR))  # type: ignore[arg-type]
    if queues is not None:
        DBOS.listen_queues([name for queue in queues for name in _queue_names(queue)])
    DBOS.launch()
    logging.getLogger("dbos").addFilter(_stops_are_not_errors)
    for name in _queue_names(ROUNDS_QUEUE):
        await DBOS.register_queue_async(
            name,
            worker_concurrency=settings.POWERON_WORKER_CONCURRENCY,
            polling_interval_sec=settings.POWERON_QUEUE_POLL_SECONDS,
        )
    logger.info("DBOS launched: executor %s, version %s", EXECUTOR, settings.POWERON_APP_VERSION)
    await resume_earlier_runs(plain)


def rounds_queue() -> str:
    """The queue this app database's worker-mode rounds wait on (DBOS launched)."""
    assert INSTALLATION, "DBOS is not launched in this process"
    return f"{ROUNDS_QUEUE}-{INSTALLATION}"


def _queue_names(queue: str) -> list[str]:
    return [rounds_queue(), ROUNDS_QUEUE] if queue == ROUNDS_QUEUE else [queue]


async def resume_earlier_runs(plain_executor: str) -> None:
    """Resume this database's rounds that this process was running under its name of
    before run ids (an upgrade in the middle of a run): DBOS's own recovery looks for the
    qualified name only. Rounds with run ids are never touched here."""
    runs = [
        RunRef(pk, round)
        async for pk, round in ChatWorkflow.objects.filter(
            status__in=ChatWorkflow.ACTIVE_STATUSES, run_id__isnull=True, current_round__gt=0
        ).values_list("pk", "current_round")
    ]
    if not runs:
        return
    found = await DBOS.list_workflows_async(
        workflow_ids=[run.dbos_id for run in runs], load_input=False, load_output=False
    )
    for item in found:
        if item.status == "PENDING" and item.executor_id == plain_executor:
            logger.info("resuming %s, begun before run ids", item.workflow_id)
            await DBOS.resume_workflow_async(item.workflow_id, queue_name=item.queue_name)


@DBOS.workflow(name="poweron.warm_up")
async def warm_up_workflow() -> str:
    """Nothing of a run's own: one checkpointed step and one receive that finds nothing, so
    the first round finds DBOS's statements compiled and its threads and connections open."""
    await DBOS.run_step_async({"name": "warm_up"}, _nothing)
    await DBOS.recv_async("warm-up", timeout_seconds=0)
    return "warm"


def _nothing() -> None:
    return None


async def warm_up() -> None:
    """Run the warm-up workflow once, then delete it; a failure only costs the first round
    its speed (it is logged, never raised)."""
    dbos_id = f"poweron-warm-up-{uuid.uuid4().hex}"
    try:
        with SetWorkflowID(dbos_id):
            handle = await DBOS.start_workflow_async(warm_up_workflow)
        await handle.get_result()
    except Exception:
        logger.warning("the durable warm-up failed; the first round may be slower", exc_info=True)
    with contextlib.suppress(Exception):
        await DBOS.delete_workflow_async(dbos_id)


def _stops_are_not_errors(record: logging.LogRecord) -> bool:
    """DBOS logs a cancelled workflow as an error with a traceback; a stop is not one. Nor is
    a round handed back when its worker stops (DBOS warns once per round then)."""
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, dbos_error.DBOSAwaitedWorkflowCancelledError):
        return False
    message = record.getMessage()
    if shutting_down and message.startswith("Asyncio task cancelled for workflow or step"):
        return False
    return "was cancelled during execution" not in message


def launch_with_daphne(watch: Callable[[], Awaitable[None]]) -> None:
    """When Daphne serves the app, launch DBOS inside its loop once the reactor runs, so
    recovered runs share the loop with the sockets; a process that runs rounds makes ready
    what they need first; then `watch` keeps an eye on the runs of other processes.
    Elsewhere (tests, commands) do nothing."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None:
        return
    runs_rounds = settings.POWERON_RUNNER != "worker"
    if runs_rounds:
        setup.preload()  # before Daphne listens: the first round does not import

    async def start() -> None:
        if runs_rounds:
            await setup.warm_up()  # the model's client, in the loop the rounds run in
        try:
            await launch(queues=None if runs_rounds else [])
        except Exception as error:  # noqa: BLE001 - said, then the process ends
            logger.critical(
                "PowerOn cannot start its durable runtime (DBOS at %s): %s. Without it no run "
                "can start or resume; this process stops so that its supervisor restarts it.",
                redacted_url(system_database_url()),
                error,
            )
            os._exit(3)  # Daphne would go on serving pages whose runs never start
        if runs_rounds:
            await warm_up()  # DBOS's own first steps, before the first round's
        await watch()

    def begin() -> None:
        asyncio.get_running_loop().create_task(start(), name="poweron-durable")

    reactor.callWhenRunning(lambda: reactor.callLater(0, begin))


@dataclass(frozen=True)
class RunRef:
    """One round's durable run: the workflow, the round's number and the run's own id,
    drawn when the round opened (None for rounds opened before run ids existed)."""

    workflow_id: int
    round: int
    run_id: uuid.UUID | None = None

    @classmethod
    def of(cls, workflow: ChatWorkflow) -> RunRef:
        """The run of the workflow's current round."""
        return cls(workflow.pk, workflow.current_round, workflow.run_id)

    @property
    def dbos_id(self) -> str:
        """The DBOS workflow id: readable, and unique for all time by its run id, so no reset,
        restore or other app database can meet a round of another's (or its finished
        state) under it. Without a run id: the id rounds had before, for the ones in flight."""
        legacy = f"poweron-{self.workflow_id}-round-{self.round}"
        return legacy if self.run_id is None else f"{legacy}-{self.run_id.hex}"


async def current(workflow_id: int) -> RunRef:
    """The run of a workflow's current round."""
    round, run_id = await ChatWorkflow.objects.values_list("current_round", "run_id").aget(
        pk=workflow_id
    )
    return RunRef(workflow_id, round, run_id)


def belongs_here(dbos_id: str, workflow_id: int, message_id: int) -> bool:
    """Whether a round DBOS runs is this app database's current round of that workflow: a
    run recovered from a run state database that outlived its app database (reset,
    restored, or shared with another) is not, and must touch nothing here."""
    workflow = ChatWorkflow.objects.filter(pk=workflow_id).first()
    if workflow is None or RunRef.of(workflow).dbos_id != dbos_id:
        return False
    return workflow.messages.filter(pk=message_id, round=workflow.current_round).exists()


async def status(run: RunRef) -> str | None:
    """DBOS's state of a round (PENDING, ENQUEUED, SUCCESS, CANCELLED, ERROR…), or None."""
    found = await DBOS.get_workflow_status_async(run.dbos_id)
    return found.status if found else None


async def cancel(run: RunRef) -> None:
    """Stop a round for good: cancelled in the system database first (so no process ever
    resumes it), then its task here, so the model call or tool in flight stops now."""
    await DBOS.cancel_workflow_async(run.dbos_id)
    runner = RUNNERS.get(run.dbos_id)
    if runner is not None:
        runner.stop()


def cancel_now(run: RunRef) -> None:
    """Cancel a round in the system database without DBOS launched (for `settle_runs`)."""
    with _client() as client:
        client.cancel_workflow(run.dbos_id)


@contextmanager
def _client() -> Iterator[DBOSClient]:
    """A DBOS client on the system database, created if this is a fresh install."""
    url = system_database_url()
    DBOS.migrate(url, schema="dbos")
    client = DBOSClient(system_database_url=url, serializer=PORTABLE_JSON)
    try:
        yield client
    finally:
        client.destroy()


def statuses(runs: Iterable[RunRef]) -> dict[RunRef, str]:
    """DBOS's states of several rounds: through this process's DBOS when it is launched (the
    watch of every process asks every few seconds), else through a client of its own (for
    `settle_runs`, which does not launch DBOS)."""
    wanted = {run.dbos_id: run for run in runs}
    if not wanted:
        return {}
    options: dict[str, Any] = {"load_input": False, "load_output": False}
    if dbos_internals.is_launched():
        found = DBOS.list_workflows(workflow_ids=list(wanted), **options)
    else:
        with _client() as client:
            found = client.list_workflows(workflow_ids=list(wanted), **options)
    return {wanted[item.workflow_id]: item.status for item in found}


shutting_down = False
"""Set by a process that is stopping: its rounds are handed back, not ended."""


async def hand_back_all() -> list[int]:
    """A stopping process ends its rounds' tasks without ending the rounds: they stay
    pending, to be resumed by another process (each records that it waits again)."""
    global shutting_down
    shutting_down = True
    running = list(RUNNERS.values())
    for each in running:
        each.task.cancel()
    await asyncio.gather(*(each.task for each in running), return_exceptions=True)
    return [each.workflow_id for each in running]


async def release(workflow_ids: list[int]) -> None:
    """Let other processes take these rounds over at once (call after DBOS.destroy(), so
    this process cannot take them back)."""
    long_ago = timezone.now() - timedelta(days=1)
    await ChatWorkflow.objects.filter(pk__in=workflow_ids).aupdate(heartbeat=long_ago)
