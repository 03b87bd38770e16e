"""Template context shared by every page."""

from django.http import HttpRequest

from .execution import setup


def model_status(request: HttpRequest) -> dict[str, object]:
    """Whether a real model is configured, and its name, for the banner and the composer."""
    return {"model_configured": setup.model_configured(), "model_name": setup.model_label()}
