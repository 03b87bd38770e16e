"""Template context shared by every page."""

from . import agent


def model_status(request) -> dict[str, object]:
    """Whether a real model is configured, and its name, for the banner and the composer."""
    return {"model_configured": agent.model_configured(), "model_name": agent.model_label()}
