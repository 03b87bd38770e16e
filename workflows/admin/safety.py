"""Admin pages that cannot be made to reveal a connection's secret by filtering or sorting."""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db.models import Model
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest

from workflows.models import Connection

_M = TypeVar("_M", bound=Model)


def reaches_secret(model: type[Model], lookup: str) -> bool:
    """Whether a lookup or ordering path (`secret__regex`, `owner__connections__secret`,
    `-secret`) reaches Connection.secret, which is write-only: filtering or sorting on it
    would answer yes/no questions about its value."""
    for part in lookup.lstrip("-").split(LOOKUP_SEP):
        try:
            field = model._meta.get_field(part)
        except FieldDoesNotExist:
            return False
        if model is Connection and field.name == "secret":
            return True
        related = field.related_model  # a model once the apps are loaded ("self" before)
        if not field.is_relation or related is None or isinstance(related, str):
            return False
        model = related
    return False


class SecretSafeAdmin(admin.ModelAdmin[_M]):
    """Refuses every filter and ordering that reaches a connection's secret (a 400, the
    same whatever the value asked about)."""

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        if reaches_secret(self.model, lookup):
            return False
        return super().lookup_allowed(lookup, value, request)

    def get_ordering(self, request: HttpRequest) -> list[Any]:
        ordering = super().get_ordering(request) or ()
        return [field for field in ordering if not _orders_by_secret(self.model, field)]

    def get_sortable_by(self, request: HttpRequest) -> list[Any]:
        sortable = super().get_sortable_by(request)
        return [field for field in sortable if not _orders_by_secret(self.model, field)]


def _orders_by_secret(model: type[Model], field: object) -> bool:
    return isinstance(field, str) and reaches_secret(model, field)
