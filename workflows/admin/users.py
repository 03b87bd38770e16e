"""Accounts in admin: Django's user admin without lookups that reach a connection's secret,
and no account deleted while one of its runs is going."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User as UserModel
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from workflows.models import ChatWorkflow

from .deletion import guarded_delete
from .safety import SecretSafeAdmin

# Users reach connections (`connections__secret`): their admin refuses those lookups too.
User = get_user_model()
if admin.site.is_registered(User):
    admin.site.unregister(User)


def running_of(users: Iterable[UserModel] | QuerySet[UserModel]) -> list[ChatWorkflow]:
    """The workflows of these users with a run going."""
    return list(
        ChatWorkflow.objects.filter(owner__in=users, status__in=ChatWorkflow.ACTIVE_STATUSES)
    )


@admin.action(permissions=["delete"], description="Delete selected users")
def delete_users_unless_running(
    modeladmin: SecretSafeUserAdmin, request: HttpRequest, queryset: QuerySet[UserModel]
) -> HttpResponse | None:
    """Django's delete action for accounts, refused (nothing deleted) while one of theirs
    runs: its run would write into a workflow that is gone."""
    if running := running_of(queryset):
        names = ", ".join(f"“{w}” ({w.owner})" for w in running)
        modeladmin.message_user(
            request, f"Nothing was deleted: {names} running. Stop it first.", level=messages.ERROR
        )
        return None
    return delete_selected(modeladmin, request, queryset)


@admin.register(User)
class SecretSafeUserAdmin(SecretSafeAdmin[UserModel], UserAdmin[UserModel]):
    """Django's user admin, without lookups that reach a connection's secret; an account
    with a run going is not deleted (as a workflow with a run going is not)."""

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        user = self.get_object(request, unquote(object_id))
        if user is not None and (running := running_of([user])):
            names = ", ".join(f"“{w}”" for w in running)
            self.message_user(
                request,
                f"The account {user} has a run going ({names}); stop the run before deleting it.",
                level=messages.ERROR,
            )
            return redirect("admin:auth_user_change", user.pk)
        return super().delete_view(request, object_id, extra_context)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return guarded_delete(super().get_actions(request), delete_users_unless_running)
