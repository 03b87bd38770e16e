"""Seal every connection's secret under the site's current SECRET_KEY (after a rotation)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from workflows.models import Connection
from workflows.sealing import is_unreadable


class Command(BaseCommand):
    help = (
        "Seal every stored connection secret under the current SECRET_KEY; run it after "
        "rotating the key (the old one in SECRET_KEY_FALLBACKS), then drop the fallback."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        resealed, unreadable = 0, list[str]()
        for pk in Connection.objects.exclude(secret="").values_list("pk", flat=True):
            # One row at a time, under its lock: a secret its owner changes meanwhile is
            # read as it is then, never overwritten with the one read before.
            with transaction.atomic():
                connection = (
                    Connection.objects.select_for_update().select_related("owner").filter(pk=pk)
                ).first()
                if connection is None or not (
                    connection.secret or is_unreadable(connection.secret)
                ):
                    continue
                if is_unreadable(connection.secret):
                    unreadable.append(f"{connection.owner.get_username()}/{connection.label}")
                    continue
                connection.save(update_fields=["secret"])
                resealed += 1
        self.stdout.write(f"Resealed {resealed} connection secret(s) under the current key.")
        if unreadable:
            raise CommandError(
                f"{len(unreadable)} secret(s) no key opens (the key they were sealed with is "
                f"neither SECRET_KEY nor in SECRET_KEY_FALLBACKS); their owners must enter them "
                f"again on Connections: {', '.join(unreadable)}"
            )
