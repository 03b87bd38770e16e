"""Markdown to safe HTML, for reports and for the chat UI.

Markdown written by a model may carry text from the web or from documents, so it is
untrusted: raw HTML is escaped by the parser, and the result goes through an allow-list
sanitiser. Images become plain links, because an image URL loads without a click and can
leak data to whoever controls it.

The chat page renders a little more than reports do: GFM task lists (disabled checkboxes in
a label) and code blocks highlighted by Pygments (token classes, coloured by
static/css/highlight.css). While an answer streams, static/js/markdown.js renders it in the
browser with the same parser (markdown-it, of which markdown-it-py is the port) and
sanitises it with DOMPurify set up from `page_sanitizer_config()`, the allow-list below.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from html import escape
from typing import Any

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.tasklists import tasklists_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

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
STYLE_PROPERTIES = frozenset({"text-align"})

HIGHLIGHT_CLASSES = frozenset(name for name in STANDARD_TYPES.values() if name)
"""Pygments' token classes: the only classes a highlighted code block's spans keep."""
PAGE_TAGS = ALLOWED_TAGS | {"input", "label", "span"}
PAGE_ATTRIBUTES = {**ALLOWED_ATTRIBUTES, "input": {"checked"}}
PAGE_CLASSES = {
    "span": HIGHLIGHT_CLASSES,
    "ul": frozenset({"contains-task-list"}),
    "ol": frozenset({"contains-task-list"}),
    "li": frozenset({"task-list-item"}),
    "input": frozenset({"task-list-item-checkbox"}),
}
PAGE_FORCED_ATTRIBUTES = {"input": {"type": "checkbox", "disabled": "disabled"}}
"""Set on every such element whatever it had: an input in an answer is a task list's
disabled checkbox, never a field to type into."""

HIGHLIGHT_MAX_CHARS = 50_000
"""Longer code blocks are shown plain: colouring them would slow the page's render."""
HIGHLIGHT_STYLES = {"light": "xcode", "dark": "lightbulb"}
"""Pygments styles whose every colour reads at 4.5:1 or more on Pico's code background."""


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


@cache
def _lexer(language: str) -> Lexer | None:
    try:  # the input is kept as it is: no blank line stripped, no tab expanded
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def _highlight(code: str, language: str, attrs: str) -> str:
    """A fence's code as Pygments' token spans ("": shown plain), for a known language."""
    lexer = _lexer(language.lower()) if language else None
    if lexer is None or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    return highlight(code, lexer, HtmlFormatter(nowrap=True))


@cache
def _page_parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False, "highlight": _highlight}).enable("table")
    parser.add_render_rule("image", _render_image_as_link)
    parser.use(tasklists_plugin, label=True)
    return parser


def sanitize_html(html: str, *, page: bool = False) -> str:
    """Keep only the allow-listed tags, attributes and URL schemes of an HTML fragment (with
    `page`, the chat page's wider list: task lists and highlighted code)."""
    attributes = PAGE_ATTRIBUTES if page else ALLOWED_ATTRIBUTES
    return nh3.clean(
        html,
        tags=set(PAGE_TAGS if page else ALLOWED_TAGS),
        clean_content_tags={"script", "style"},
        attributes={tag: set(names) for tag, names in attributes.items()},
        allowed_classes={tag: set(names) for tag, names in PAGE_CLASSES.items()} if page else None,
        set_tag_attribute_values=PAGE_FORCED_ATTRIBUTES if page else None,
        url_schemes=set(URL_SCHEMES),
        link_rel=LINK_REL,
        filter_style_properties=set(STYLE_PROPERTIES),
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
    steps (the answer's top level becomes h4, the next h5, and nothing goes past h6); task
    lists are disabled checkboxes, and code in a named language is highlighted."""
    html = sanitize_html(_page_parser().render(text), page=True)
    html = _TABLE_ALIGN.sub(r'\1 class="align-\2"', html)
    html = _TABLE_STYLE.sub(r"\1", html)
    levels = [int(level) for _, level in _HEADING.findall(html)]
    shift = PAGE_TOP_HEADING - min(levels, default=PAGE_TOP_HEADING)
    return _HEADING.sub(lambda m: f"<{m[1]}h{min(int(m[2]) + shift, 6)}", html)


def page_sanitizer_config() -> dict[str, Any]:
    """The page's allow-list as data, for the browser's sanitiser (DOMPurify) to apply the
    same while an answer streams; lists are sorted, so the same list reads the same."""
    return {
        "tags": sorted(PAGE_TAGS),
        "attributes": {tag: sorted(names) for tag, names in sorted(PAGE_ATTRIBUTES.items())},
        "classes": {tag: sorted(names) for tag, names in sorted(PAGE_CLASSES.items())},
        "forced": {tag: dict(sorted(v.items())) for tag, v in PAGE_FORCED_ATTRIBUTES.items()},
        "urlSchemes": sorted(URL_SCHEMES),
        "linkRel": LINK_REL,
        "styleProperties": sorted(STYLE_PROPERTIES),
        "topHeading": PAGE_TOP_HEADING,
    }


def highlight_css() -> str:
    """static/css/highlight.css: the token colours of HIGHLIGHT_STYLES, light and dark (for
    the system's dark theme unless light is chosen, and for a chosen dark one)."""
    light, dark = (_token_rules(HIGHLIGHT_STYLES[theme]) for theme in ("light", "dark"))
    auto_dark = ':root:not([data-theme="light"]) '
    lines = [
        "/* Code colours of the chat's answers (Pygments' token classes). Generated by",
        "   workflows.markdown.highlight_css() (make vendor); a test keeps it in step. */",
        *(f".markdown pre {selector} {{ {rule} }}" for selector, rule in light),
        *(f'[data-theme="dark"] .markdown pre {selector} {{ {rule} }}' for selector, rule in dark),
        "@media (prefers-color-scheme: dark) {",
        *(f"  {auto_dark}.markdown pre {selector} {{ {rule} }}" for selector, rule in dark),
        "}",
    ]
    return "\n".join(lines) + "\n"


def _token_rules(style_name: str) -> list[tuple[str, str]]:
    """(selector, declarations) of a Pygments style's token colours and weights (not its
    backgrounds or borders: the page's code background stays)."""
    rules = []
    for token, style in get_style_by_name(style_name):
        name = STANDARD_TYPES.get(token)
        parts = [f"color: #{style['color']}"] if style["color"] else []
        parts += ["font-weight: bold"] if style["bold"] else []
        parts += ["font-style: italic"] if style["italic"] else []
        if name and parts:
            rules.append((f".{name}", "; ".join(parts)))
    return sorted(rules)
