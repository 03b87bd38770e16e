"""Template tags for admin pages."""

from django import template

from workflows.execution import setup, tools_panel

register = template.Library()


@register.simple_tag
def tool_overview() -> list[dict]:
    """The site's tool catalog with the reason each unavailable tool is left out."""
    return tools_panel.tool_overview()


@register.simple_tag
def model_label() -> str:
    """The model the agent uses, or "demo model" when none is configured."""
    return setup.model_label()
