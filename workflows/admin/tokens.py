"""Personal API tokens in admin: staff see whose they are, their scopes and use, and revoke
them; nobody makes one here (its secret would have to be shown to someone), and neither the
token nor its digest is ever shown, filtered or sorted on."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from workflows.api import tokens
from workflows.models import ApiToken


@admin.action(description="Revoke selected tokens")
def revoke_tokens(
    modeladmin: ApiTokenAdmin, request: HttpRequest, queryset: QuerySet[ApiToken]
) -> None:
    """Revoke every selected token still in use: its next request is refused."""
    revoked = 0
    for token in queryset.filter(revoked__isnull=True):
        tokens.token_revoke(token=token)
        revoked += 1
    modeladmin.message_user(request, f"Revoked {revoked} token(s).", level=messages.SUCCESS)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ("name", "owner", "shown_prefix", "scopes", "created", "expires", "last_used",
                    "revoked")  # fmt: skip
    list_filter = ("revoked", "created")
    search_fields = ("name", "prefix", "owner__username")
    list_select_related = ("owner",)
    fields = ("owner", "name", "shown_prefix", "scopes", "created", "expires", "last_used",
              "revoked")  # fmt: skip
    readonly_fields = fields
    actions = (revoke_tokens,)

    @admin.display(description="Token", ordering="prefix")
    def shown_prefix(self, token: ApiToken) -> str:
        return f"pon_{token.prefix}_…"

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiToken]:
        return super().get_queryset(request).defer("digest")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        if lookup.split("__")[0] == "digest":
            return False
        return super().lookup_allowed(lookup, value, request)
