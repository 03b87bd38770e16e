"""The credentials users keep in PowerOn: their connections (a provider's key, an MCP server)
and their personal API tokens. Stored sealed or as a digest, never shown."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from workflows.sealing import PREFIX, SealedTextField, is_unreadable


class Connection(models.Model):
    """A user's credential for a provider (e.g. their own Tavily key), named by label.

    The secret is never rendered in templates, admin, logs, events or prompts, and is stored
    sealed (`workflows.sealing`).
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="connections"
    )
    label = models.SlugField(max_length=64)
    kind = models.CharField(max_length=32, help_text="The provider, e.g. tavily, or mcp.")
    secret = SealedTextField(blank=True)
    url = models.URLField(
        max_length=500,
        blank=True,
        help_text="An MCP server's streamable-HTTP endpoint (kind mcp); the secret, if any, is "
        "sent as its bearer token.",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["label"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "label"], name="connection_label_unique")
        ]

    def __str__(self) -> str:
        return f"{self.label} ({self.kind})"

    def __repr__(self) -> str:
        return f"<Connection {self.label} kind={self.kind} secret=***>"

    def clean_fields(self, exclude: Any = None) -> None:
        """A secret given in a form or a service call is a key or token, never a sealed value:
        opened here, a seal copied from a backup would hand another user's secret to this
        connection's server (the field opens seals only for `loaddata`)."""
        given = self.secret
        if isinstance(given, str) and not is_unreadable(given) and given.startswith(PREFIX):
            raise ValidationError(
                {"secret": "This is not a key or token; enter the secret itself."}
            )
        super().clean_fields(exclude=exclude)

    @property
    def needs_secret_again(self) -> bool:
        """Whether its stored secret no longer opens with the site's keys (SECRET_KEY changed
        without a fallback): the owner must enter it again."""
        return is_unreadable(self.secret)


class ApiToken(models.Model):
    """A personal API token: a program acts as its owner through the HTTP API, within the
    token's scopes. Only a digest of the secret is stored (`workflows.api.tokens`); the
    secret is shown once, when the token is made."""

    class Scope(models.TextChoices):
        READ = "read", "read: see workflows, messages, documents, runs and events"
        RUN = "run", "run: create, rename, delete, upload, send, stop, steer, answer"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, unique=True, editable=False, help_text="Shown and looked up by."
    )
    digest = models.CharField(
        max_length=64, editable=False, help_text="SHA-256 of the whole token, never the token."
    )
    scopes = models.JSONField(default=list)
    expires = models.DateTimeField(null=True, blank=True, help_text="Empty: never.")
    last_used = models.DateTimeField(null=True, blank=True, editable=False)
    revoked = models.DateTimeField(null=True, blank=True, editable=False)
    window_start = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="The minute the request count is of."
    )
    window_count = models.PositiveIntegerField(default=0, editable=False)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "API token"
        indexes = [models.Index(fields=["owner", "-created"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def __repr__(self) -> str:
        return f"<ApiToken {self.prefix} owner={self.owner_id} digest=***>"

    @property
    def is_expired(self) -> bool:
        return self.expires is not None and self.expires <= timezone.now()
