"""Template tags of the chat page: data its scripts need from the server, as JSON."""

from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString

from workflows.markdown import page_sanitizer_config
from workflows.tools.documents.parse import EMPTY, UNREADABLE, accept_attribute, readable_types

register = template.Library()


@register.simple_tag
def markdown_config() -> SafeString:
    """The page's Markdown allow-list (#markdown-config), which the browser's sanitiser
    applies to an answer while it streams."""
    return json_script(page_sanitizer_config(), "markdown-config")


@register.simple_tag
def readable_files() -> SafeString:
    """What the document readers read (#readable-files), checked when files are picked."""
    return json_script(readable_types(), "readable-files")


@register.simple_tag
def accepted_files() -> str:
    """The file picker's `accept` attribute: the types the readers read."""
    return accept_attribute()


@register.simple_tag
def file_refusal(reason: str) -> str:
    """A refusal of a picked file ("unreadable" or "empty"), with {name} for its name."""
    return {"unreadable": UNREADABLE, "empty": EMPTY}[reason]
