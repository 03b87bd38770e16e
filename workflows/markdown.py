"""Markdown to safe HTML, for reports and for the chat UI.

Markdown written by a model may carry text from the web or from documents, so it is
untrusted: raw HTML is escaped by the parser, and the result goes through an allow-list
sanitiser. Images become plain links, because an image URL loads without a click and can
leak data to whoever controls it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from html import escape
from typing import Any

import nh3
from markdown_it import MarkdownIt

ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4",
        "h5", "h6", "hr", "i", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table",
        "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "td": {"style"},
    "th": {"style"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_REL = "noopener noreferrer nofollow"


def _render_image_as_link(
    self: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any
) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    return f'<a href="{escape(token.attrGet("src") or "")}">{escape(alt)}</a>'


@cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.add_render_rule("image", _render_image_as_link)
    return parser


def sanitize_html(html: str) -> str:
    """Keep only the allow-listed tags, attributes and URL schemes of an HTML fragment."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        filter_style_properties={"text-align"},
        strip_comments=True,
    )


def render_markdown(text: str) -> str:
    """Render CommonMark (with tables) to sanitised HTML."""
    return sanitize_html(_parser().render(text))


_TABLE_ALIGN = re.compile(r'(<t[dh]) style="text-align:(left|center|right)"')
_TABLE_STYLE = re.compile(r'(<t[dh]) style="[^"]*"')


_HEADING = re.compile(r"<(/?)h([1-6])(?=[\s>])")
PAGE_TOP_HEADING = 4
"""An answer sits under the page's h1, its round's h2 and its own h3: its headings start at h4."""


def render_markdown_for_page(text: str) -> str:
    """Render for the chat page, whose CSP allows no style attribute: a table column's
    alignment becomes a class (`align-right`); headings move under the page's, keeping their
    steps (the answer's top level becomes h4, the next h5, and nothing goes past h6)."""
    html = _TABLE_ALIGN.sub(r'\1 class="align-\2"', render_markdown(text))
    html = _TABLE_STYLE.sub(r"\1", html)
    levels = [int(level) for _, level in _HEADING.findall(html)]
    shift = PAGE_TOP_HEADING - min(levels, default=PAGE_TOP_HEADING)
    return _HEADING.sub(lambda m: f"<{m[1]}h{min(int(m[2]) + shift, 6)}", html)
