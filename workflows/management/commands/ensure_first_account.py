"""Create the first account when the database has no user, and print its password once."""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create a first superuser with a random password when no user exists yet."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options) -> None:
        User = get_user_model()
        if User.objects.exists():
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        line = "=" * 60
        self.stdout.write(
            f"{line}\nFirst account created (shown once, write it down):\n"
            f"  username: {username}\n  password: {password}\n{line}"
        )
