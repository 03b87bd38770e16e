"""Connections in admin: secrets write-only, an MCP server checked as on the user's own
Connections page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from workflows.forms import CONNECTION_KINDS, McpChecks, kept_secret_retargeted
from workflows.models import Connection

from .safety import SecretSafeAdmin


class ConnectionAdminForm(McpChecks, forms.ModelForm[Connection]):
    """Secrets are write-only: the field never renders the stored value. An MCP server is
    checked as on the user's Connections page (its label, its public URL)."""

    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        required=False,
        help_text="Write-only. Leave blank to keep the stored secret.",
    )
    kind = forms.ChoiceField(choices=CONNECTION_KINDS)
    url = forms.URLField(required=False, max_length=500, assume_scheme="https")

    class Meta:
        model = Connection
        fields = ("owner", "label", "kind", "url", "secret")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:  # a stored secret stays with its owner and what it is for
            for name in ("owner", "kind"):
                if name in self.fields:  # a view-only page has none
                    self.fields[name].disabled = True

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        given = data.get("secret", "")
        secret = given or (self.instance.secret if self.instance.pk else "")
        data["secret"] = secret
        if data.get("kind") == "mcp":
            self.check_mcp(data.get("owner"), data.get("label", ""), data.get("url", ""))
            if refusal := kept_secret_retargeted(self.instance, data.get("url", ""), given):
                self.add_error("secret", refusal)
        else:
            if data.get("url"):
                self.add_error("url", "Only an MCP server has a URL.")
            if not secret:
                self.add_error("secret", "This kind of connection needs its secret.")
        return data


SECRET_STATES = {
    "set": "Set (write-only: never shown; with the right to change it, replace it below).",
    "unreadable": "Set, but it no longer opens with the site's key: enter it again.",
    "none": "Not set.",
}


@admin.register(Connection)
class ConnectionAdmin(SecretSafeAdmin[Connection]):
    """A connection's secret is never shown, to anyone: whether one is set is (`secret_state`),
    and staff who may change connections get a write-only field to replace it; a page for
    staff who may only view has no secret field at all (its value would be shown)."""

    form = ConnectionAdminForm
    list_display = ("label", "kind", "url", "owner", "created")
    list_filter = ("kind",)
    search_fields = ("label", "url", "owner__username")
    raw_id_fields = ("owner",)
    readonly_fields = ("secret_state",)

    def get_fields(self, request: HttpRequest, obj: Connection | None = None) -> list[Any]:
        fields = ["owner", "label", "kind", "url"]
        if obj is not None:
            fields.append("secret_state")
        if obj is None or self.has_change_permission(request, obj):
            fields.append("secret")
        return fields

    def get_readonly_fields(self, request: HttpRequest, obj: Connection | None = None) -> list[str]:
        readonly = list(super().get_readonly_fields(request, obj))
        return [name for name in readonly if name != "secret"]

    @admin.display(description="Secret")
    def secret_state(self, connection: Connection) -> str:
        """Whether a secret is stored, never what it is."""
        if connection.needs_secret_again:
            return SECRET_STATES["unreadable"]
        if not connection.secret:
            return SECRET_STATES["none"]
        return SECRET_STATES["set"]
