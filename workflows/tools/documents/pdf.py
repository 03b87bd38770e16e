"""A plain, readable PDF from Markdown: markdown-it-py for the parsing, fpdf2 for the layout.

The Markdown is untrusted (it may carry text from the web), so raw HTML is never parsed
as markup and images become their alt text: nothing is ever fetched. With no Unicode font
configured the PDF uses the built-in Helvetica, which only knows Windows-1252: other
characters are transliterated or replaced, never a crash.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterator
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from fpdf import FPDF, FontFace, TextStyle
from markdown_it import MarkdownIt
from markdown_it.token import Token

_CORE_ENCODING = "windows-1252"
_BODY_SIZE = 10.5
_LEADING = 1.35
_CHUNK = 300  # tokens
_MAX_COLUMNS = 10  # More would leave fpdf2 columns too narrow for a single wide glyph.
_FALLBACKS = {
    "\u2212": "-", "\u2010": "-", "\u2011": "-", "\u2192": "->", "\u2190": "<-",
    "\u0142": "l", "\u0141": "L", "\u0111": "d", "\u0110": "D", "\u0131": "i",
}  # fmt: skip


def markdown_to_pdf(title: str, markdown: str, *, font: str | None = None) -> bytes:
    """Render a Markdown report as a PDF; `font` is an optional path to a Unicode TTF."""
    pdf = FPDF(format="A4")
    pdf.set_margins(20, 18, 20)
    pdf.set_auto_page_break(auto=True, margin=18)
    pdf.set_title(title)
    pdf.set_creator("PowerOn")
    if font and Path(font).is_file():
        # The one file serves every style, so bold and italic text never lack a font.
        for style in ("", "B", "I", "BI"):
            pdf.add_font("body", style, font)
        body, mono, safe = "body", "body", _identity
    else:
        pdf.core_fonts_encoding = _CORE_ENCODING
        body, mono, safe = "helvetica", "courier", core_safe
    pdf.add_page()
    pdf.set_font(body, size=_BODY_SIZE)
    parser = _parser()
    tokens = _prepare(_fit_tables(parser.parse(markdown)), safe)
    for chunk in _chunks(tokens):
        pdf.write_html(
            parser.renderer.render(chunk, parser.options, {}),
            tag_styles=_styles(mono),
            ul_bullet_char="\u2022",
            li_prefix_color=(40, 40, 40),
            table_line_separators=True,
        )
    return bytes(pdf.output())


@cache
def _parser() -> MarkdownIt:
    # Past maxNesting markdown-it drops the rest of the text; 60 lets 29 list levels through,
    # whose indent still fits the page.
    return MarkdownIt("commonmark", {"html": False, "maxNesting": 60}).enable("table")


def _styles(mono: str) -> dict[str, FontFace]:
    heading: dict[str, Any] = {"color": "#1d2430", "font_style": "B", "b_margin": 0.4}
    return {
        "h1": TextStyle(font_size_pt=18, t_margin=2, **heading),
        "h2": TextStyle(font_size_pt=14, t_margin=6, **heading),
        "h3": TextStyle(font_size_pt=12, t_margin=5, **heading),
        **{f"h{level}": TextStyle(font_size_pt=11, t_margin=4, **heading) for level in (4, 5, 6)},
        "a": FontFace(color="#1b5fc1", emphasis="UNDERLINE"),
        "code": FontFace(family=mono),
        "pre": TextStyle(font_family=mono, font_size_pt=8.5, t_margin=3),
        "blockquote": TextStyle(color="#4a5361", font_style="I", t_margin=2, b_margin=2),
    }


def _chunks(tokens: list[Token]) -> Iterator[list[Token]]:
    """Whole top-level blocks, a few at a time: one write_html call slows down quadratically."""
    chunk: list[Token] = []
    for token in tokens:
        chunk.append(token)
        # Never right after a heading: write_html keeps the next block close to it.
        block_end = token.level == 0 and token.nesting < 1 and token.type != "heading_close"
        if block_end and len(chunk) >= _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _fit_tables(tokens: list[Token]) -> list[Token]:
    """Tables too wide for the page become a paragraph, one line per row."""
    out: list[Token] = []
    start = 0
    for token in tokens:
        if token.type == "table_open":
            start = len(out)
        out.append(token)
        if token.type == "table_close" and (
            sum(t.type == "th_open" for t in out[start:]) > _MAX_COLUMNS
        ):
            out[start:] = _rows_as_lines(out[start:])
    return out


def _rows_as_lines(table: list[Token]) -> list[Token]:
    line: list[Token] = []
    for previous, token in pairwise(table):
        if token.type == "tr_open" and line:
            line.append(Token("hardbreak", "br", 0))
        elif token.type in ("th_open", "td_open") and previous.type in ("th_close", "td_close"):
            line.append(Token("text", "", 0, content=" | "))
        elif token.type == "inline":
            line += token.children or []
    inline = Token("inline", "", 0, children=line)
    return [Token("paragraph_open", "p", 1), inline, Token("paragraph_close", "p", -1)]


def _prepare(tokens: list[Token], safe: Callable[[str], str]) -> list[Token]:
    """Fit the tokens to fpdf2: encodable text, plain cells and headings, list items without <p>."""
    in_item = 0
    for index, token in enumerate(tokens):
        if token.type in ("th_open", "td_open"):
            align = str(token.attrGet("style") or "").removeprefix("text-align:")
            token.attrs = {"align": align or "left"}
        elif token.type in ("list_item_open", "list_item_close"):
            in_item += token.nesting
        elif token.type in ("paragraph_open", "bullet_list_open", "ordered_list_open"):
            token.attrSet("style", f"line-height:{_LEADING}")
        elif token.type in ("fence", "code_block"):
            token.content = safe(token.content)
        elif token.type == "inline":
            # fpdf2 takes a single run of text per table cell, and per bookmark for a heading.
            plain = tokens[index - 1].type in ("th_open", "td_open", "heading_open")
            token.children = _inline(token.children or [], safe, plain=plain)
            if in_item and tokens[index - 2].type == "paragraph_close":
                token.children.insert(0, Token("hardbreak", "br", 0))
        # fpdf2 starts each <p> afresh, which would drop a list item's bullet and indent.
        if in_item and token.type.startswith("paragraph_"):
            token.hidden = True
    return tokens


def _inline(children: list[Token], safe: Callable[[str], str], *, plain: bool) -> list[Token]:
    out: list[Token] = []
    href = link_text = ""
    for child in children:
        if child.type in ("text", "code_inline"):
            child.content = safe(child.content)
            link_text += child.content
        elif child.type == "image":  # Its alt text only: an image would be fetched.
            alt = "".join(part.content for part in child.children or [])
            child = Token("text", "", 0, content=safe(alt))
        elif child.type == "link_open":
            href = "" if child.markup == "autolink" else safe(str(child.attrGet("href") or ""))
            link_text = ""
        out.append(child)
        # On paper the URL must stay readable, unless the link text already shows it.
        if child.type == "link_close" and href and href != link_text:
            out.append(Token("text", "", 0, content=f" ({href})"))
    if not plain:
        return out
    text = "".join(" " if part.type.endswith("break") else part.content for part in out)
    return [Token("text", "", 0, content=text)]


def _identity(text: str) -> str:
    return text


def core_safe(text: str) -> str:
    """Text the built-in PDF fonts can encode: transliterated where possible, else '?'."""
    out = []
    for char in text:
        if _encodable(char):
            out.append(char)
            continue
        if char in _FALLBACKS:
            out.append(_FALLBACKS[char])
            continue
        base = "".join(
            part
            for part in unicodedata.normalize("NFKD", char)
            if not unicodedata.combining(part) and _encodable(part)
        )
        out.append(base or "?")
    return "".join(out)


def _encodable(char: str) -> bool:
    try:
        char.encode(_CORE_ENCODING)
    except UnicodeEncodeError:
        return False
    return True
