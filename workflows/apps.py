from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    """The PowerOn chat: workflows, their messages, documents and streamed events."""

    name = "workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        user_logged_out.connect(close_sockets_on_sign_out, dispatch_uid="poweron-sign-out")


def close_sockets_on_sign_out(sender, request, user, **kwargs) -> None:
    """A sign-out closes the live sockets opened under that session (in every process)."""
    from asgiref.sync import async_to_sync

    from workflows.live import broadcast

    if request is not None and request.session.session_key:
        async_to_sync(broadcast.session_ended)(request.session.session_key)
