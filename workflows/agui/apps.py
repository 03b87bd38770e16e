from django.apps import AppConfig


class AguiConfig(AppConfig):
    """PowerOn for AG-UI front-ends: which workflow and round each AG-UI thread and run is."""

    name = "workflows.agui"
    label = "agui"
    verbose_name = "AG-UI"
    default_auto_field = "django.db.models.BigAutoField"
