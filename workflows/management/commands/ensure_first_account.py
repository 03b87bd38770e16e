"""Create the first account when no account can sign in, and print its password once."""

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Create a first superuser with a random password when no account can sign in yet."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        User = get_user_model()
        # Accounts without a password (run_workflow's "cli") cannot sign in: they do not count.
        can_sign_in = User.objects.filter(is_active=True).exclude(password="")
        if can_sign_in.exclude(password__startswith=UNUSABLE_PASSWORD_PREFIX).exists():
            return
        if User.objects.filter(username=username).exists():
            username = f"{username}-{secrets.token_hex(2)}"
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        line = "=" * 60
        self.stdout.write(
            f"{line}\nFirst account created (shown once, write it down):\n"
            f"  username: {username}\n  password: {password}\n"
            f"Lost it? `make password ACCOUNT={username}` sets a new one.\n{line}"
        )
