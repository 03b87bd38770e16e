from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    """The PowerOn chat: workflows, their messages, documents and streamed events."""

    name = "workflows"
    verbose_name = "Workflows"
    default_auto_field = "django.db.models.BigAutoField"
