"""Execute the rounds web processes queue (POWERON_RUNNER=worker): a DBOS queue worker.

Each worker has a stable executor id: restarted under it, a worker resumes the rounds it was
running; stopped for good, its rounds are taken over by another process after
POWERON_FAILOVER_SECONDS. SIGTERM hands the rounds back at once, to be resumed elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from argparse import ArgumentParser
from typing import Any

from channels.db import database_sync_to_async
from dbos import DBOS
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workflows.events import broadcast
from workflows.execution import durable, launcher, runner, settle, setup

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Run the rounds queued by the web processes (POWERON_RUNNER=worker, needs REDIS_URL). "
        "Start as many as you like, each with its own --executor-id."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--executor-id",
            default=None,
            help="This worker's stable name (default POWERON_EXECUTOR_ID, else worker-<host>). "
            "A restarted worker must keep it to resume its rounds.",
        )

    def handle(self, *args: Any, executor_id: str | None, **options: Any) -> None:
        if not settings.REDIS_URL:
            raise CommandError("run_workers needs REDIS_URL (viewers on web processes watch runs)")
        name = executor_id or worker_name()
        settings.POWERON_EXECUTOR_ID = name
        asyncio.run(self.serve(name))

    async def serve(self, name: str) -> None:
        """Take rounds from the queue until SIGTERM/SIGINT, then hand them back."""
        for stored in (
            await database_sync_to_async(settle.cut_off_runs)(
                older_than_seconds=int(settings.POWERON_FAILOVER_SECONDS)
            )
        ).values():
            for envelope in stored:
                await broadcast.broadcast(envelope)
        assert callable(runner.round_workflow)  # registered (by the import) before DBOS launches
        await setup.warm_up()  # the first round neither imports the model client nor creates it
        try:
            await durable.launch(queues=[durable.ROUNDS_QUEUE], executor_id=name)
        except Exception as error:  # noqa: BLE001 - said in one line, then exit 3 as Daphne
            logger.critical(
                "PowerOn cannot start its durable runtime (DBOS at %s): %s. Without it no run "
                "can start or resume; this worker stops so that its supervisor restarts it.",
                durable.redacted_url(durable.system_database_url()),
                error,
            )
            raise SystemExit(3) from None
        await durable.warm_up()
        watchdog = asyncio.create_task(launcher.watch_runs())
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        self.stdout.write(
            f"Worker ready: executor {name}, up to {settings.POWERON_WORKER_CONCURRENCY} "
            f"rounds at once from {durable.ROUNDS_QUEUE}"
        )
        self.stdout.flush()
        await stopping.wait()
        watchdog.cancel()
        handed = await durable.hand_back_all()
        DBOS.destroy()
        await durable.release(handed)
        self.stdout.write(f"Worker {name} stopped; handed back {len(handed)} round(s)")


def worker_name() -> str:
    """The default executor id: POWERON_EXECUTOR_ID when set, else worker-<host name>."""
    if settings.POWERON_EXECUTOR_ID != "local":
        return settings.POWERON_EXECUTOR_ID
    return f"worker-{socket.gethostname()}"
