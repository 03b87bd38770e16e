"""Find runs that a crash or restart cut off, and give each a final status."""

from django.core.management.base import BaseCommand

from workflows import services


class Command(BaseCommand):
    help = "Settle runs left 'running' or 'stopping' by a crash or restart."

    def add_arguments(self, parser):
        parser.add_argument(
            "--stale-after",
            type=int,
            default=None,
            help="Only runs whose heartbeat is older than this many seconds "
            "(use with several processes; default: every active run).",
        )

    def handle(self, *args, stale_after: int | None, **options) -> None:
        settled = services.runs_settle_interrupted(older_than_seconds=stale_after)
        if settled:
            self.stdout.write(f"Settled {len(settled)} cut-off run(s): workflows {settled}")
