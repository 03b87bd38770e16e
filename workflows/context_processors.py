"""Template context shared by every page."""

from django.conf import settings


def model_status(request) -> dict[str, object]:
    """Whether a real model is configured, and its name, for the banner and the composer."""
    configured = bool(settings.POWERON_LLM_BASE_URL or settings.POWERON_LLM_API_KEY)
    return {
        "model_configured": configured,
        "model_name": settings.POWERON_LLM_MODEL if configured else "demo model",
    }
