from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.http import HttpRequest

    from workflows.models import ChatDocument


class WorkflowsConfig(AppConfig):
    """The PowerOn chat: workflows, their messages, documents and streamed events."""

    name = "workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_delete

        user_logged_out.connect(close_sockets_on_sign_out, dispatch_uid="poweron-sign-out")
        connection_created.connect(sqlite_lower, dispatch_uid="poweron-sqlite-lower")
        post_delete.connect(
            delete_document_file, sender="workflows.ChatDocument", dispatch_uid="poweron-files"
        )


def sqlite_lower(sender: object, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """Give SQLite a LOWER that knows every alphabet (its own folds only ASCII), for the
    sidebar's search (`selectors.Lowered`)."""
    if connection.vendor == "sqlite":
        connection.connection.create_function(
            "POWERON_LOWER", 1, lambda text: None if text is None else text.lower(),
            deterministic=True,
        )  # fmt: skip


def delete_document_file(sender: object, instance: ChatDocument, **kwargs: Any) -> None:
    """A document's file goes with its row, however the row goes (a workflow deleted in the
    app or in admin, its owner's account deleted): once the deletion is committed, so a
    rollback keeps both, and a failure to remove the file is logged, not raised."""
    from django.db import transaction

    if instance.file:
        file = instance.file
        transaction.on_commit(lambda: file.delete(save=False), robust=True)


def close_sockets_on_sign_out(
    sender: object,
    request: HttpRequest | None,
    user: AbstractBaseUser | AnonymousUser | None,
    **kwargs: Any,
) -> None:
    """A sign-out closes the live sockets opened under that session (in every process)."""
    from asgiref.sync import async_to_sync

    from workflows.events import broadcast

    if request is not None and request.session.session_key:
        async_to_sync(broadcast.session_ended)(request.session.session_key)
