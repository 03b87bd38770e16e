"""Template tags for admin pages and the sign-in page."""

from typing import Any

from django import template
from django.contrib.auth import get_user_model

from workflows.execution import setup, tools_panel

register = template.Library()


@register.simple_tag
def tool_overview() -> list[dict[str, Any]]:
    """The site's tool catalog with the reason each unavailable tool is left out."""
    return tools_panel.tool_overview()


@register.simple_tag
def model_label() -> str:
    """The model the agent uses, or "demo model" when none is configured."""
    return setup.model_label()


@register.simple_tag
def nobody_signed_in_yet() -> bool:
    """Whether no account has ever signed in (the first run's sign-in page says where the
    first account is; later ones need not)."""
    return not get_user_model().objects.filter(last_login__isnull=False).exists()
