"""Execute runs taken from the channel layer, so web processes only serve pages and sockets."""

from __future__ import annotations

import asyncio
import signal

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from workflows.contract import Envelope
from workflows.execution import launcher, settle
from workflows.execution.runner import HEARTBEAT_SECONDS, RoundRunner
from workflows.live import broadcast
from workflows.models import ChatMessage


@database_sync_to_async
def load(workflow_id: int, message_id: int) -> ChatMessage | None:
    return (
        ChatMessage.objects.select_related("workflow")
        .filter(pk=message_id, workflow_id=workflow_id)
        .first()
    )


class Command(BaseCommand):
    help = (
        "Run workflows started by the web processes (POWERON_RUNNER=worker, needs REDIS_URL). "
        "Start as many as you like; each takes runs from the shared channel layer."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--concurrency",
            type=int,
            default=None,
            help="Runs at once in this process (default POWERON_WORKER_CONCURRENCY).",
        )

    def handle(self, *args, concurrency: int | None, **options) -> None:
        if not settings.REDIS_URL:
            raise CommandError("run_workers needs REDIS_URL (the web processes send runs there)")
        settled = settle.cut_off_runs(older_than_seconds=3 * HEARTBEAT_SECONDS)
        if settled:
            self.stdout.write(f"Settled cut-off runs: workflows {list(settled)}")
        limit = concurrency or settings.POWERON_WORKER_CONCURRENCY
        self.stdout.write(f"Worker ready: up to {limit} runs at once from {launcher.RUNS_CHANNEL}")
        asyncio.run(self.serve(limit, settled))

    async def serve(self, limit: int, settled: dict[int, list[Envelope]]) -> None:
        """Take runs one by one while there is room; on SIGTERM/SIGINT stop them and exit."""
        for stored in settled.values():
            for envelope in stored:
                await broadcast.broadcast(envelope)
        layer = get_channel_layer()
        room = asyncio.Semaphore(limit)
        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        while not stopping.is_set():
            await room.acquire()
            receiving = asyncio.create_task(layer.receive(launcher.RUNS_CHANNEL))
            stopper = asyncio.create_task(stopping.wait())
            done, _ = await asyncio.wait({receiving, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if receiving not in done:
                receiving.cancel()
                break
            start = receiving.result()
            message = await load(start["workflow"], start["message"])
            if message is None:
                room.release()
                continue
            self.stdout.write(f"Running workflow {message.workflow_id} round {message.round}")
            task = launcher.spawn(RoundRunner(message.workflow, message))
            task.add_done_callback(lambda _: room.release())
        await launcher.cancel_all()  # each run records "Interrupted: the server stopped."
