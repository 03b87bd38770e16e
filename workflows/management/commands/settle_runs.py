"""Find runs that a crash or restart cut off, give each a final status, and tell viewers."""

from argparse import ArgumentParser
from typing import Any

from asgiref.sync import async_to_sync
from django.core.management.base import BaseCommand

from workflows.events import broadcast
from workflows.execution import settle


class Command(BaseCommand):
    help = "Settle runs left 'running' or 'stopping' by a crash or restart."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--stale-after",
            type=int,
            default=None,
            help="Only runs whose heartbeat is older than this many seconds "
            "(use with several processes; default: every active run).",
        )

    def handle(self, *args: Any, stale_after: int | None, **options: Any) -> None:
        settled = settle.cut_off_runs(older_than_seconds=stale_after)
        for stored in settled.values():
            for envelope in stored:
                async_to_sync(broadcast.broadcast)(envelope)
        if settled:
            self.stdout.write(f"Settled {len(settled)} cut-off run(s): workflows {list(settled)}")
