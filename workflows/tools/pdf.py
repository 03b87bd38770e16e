"""A plain, readable PDF from Markdown, with fpdf2.

The layout is deliberately simple (headings, paragraphs, bullets, code, table rows as
text). With no Unicode font configured the PDF uses the built-in Helvetica, which only
knows Windows-1252: other characters are transliterated or replaced, never a crash.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import WrapMode, XPos, YPos

_CORE_ENCODING = "windows-1252"
_HEADING_SIZES = {1: 18, 2: 14, 3: 12}
_BODY_SIZE = 10.5
_LINE = 5.5
_FALLBACKS = {
    "\u2212": "-",
    "\u2010": "-",
    "\u2011": "-",
    "\u2192": "->",
    "\u2190": "<-",
    "\u0142": "l",
    "\u0141": "L",
    "\u0111": "d",
    "\u0110": "D",
    "\u0131": "i",
}


def markdown_to_pdf(title: str, markdown: str, *, font: str | None = None) -> bytes:
    """Render a Markdown report as a PDF; `font` is an optional path to a Unicode TTF."""
    writer = _Writer(font)
    writer.pdf.set_title(title)
    writer.pdf.set_creator("PowerOn")
    in_code = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if in_code:
            writer.code(line)
        else:
            writer.markdown_line(line)
    return bytes(writer.pdf.output())


class _Writer:
    def __init__(self, font: str | None) -> None:
        self.pdf = FPDF(format="A4")
        self.pdf.set_margins(20, 18, 20)
        self.pdf.set_auto_page_break(auto=True, margin=18)
        self.unicode = bool(font) and Path(str(font)).is_file()
        if self.unicode:
            self.pdf.add_font("body", "", str(font))
            self.family = "body"
        else:
            self.pdf.core_fonts_encoding = _CORE_ENCODING
            self.family = "helvetica"
        self.pdf.add_page()

    def safe(self, text: str) -> str:
        return text if self.unicode else core_safe(text)

    def write(self, text: str, *, size: float, bold: bool = False, mono: bool = False) -> None:
        family = "courier" if mono and not self.unicode else self.family
        style = "B" if bold and not self.unicode else ""
        self.pdf.set_font(family, style=style, size=size)
        self.pdf.multi_cell(
            0,
            size * 0.55,
            self.safe(text),
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
            wrapmode=WrapMode.CHAR if mono else WrapMode.WORD,
        )

    def code(self, line: str) -> None:
        self.write(line or " ", size=8.5, mono=True)

    def markdown_line(self, line: str) -> None:
        stripped = line.strip()
        if not stripped:
            self.pdf.ln(_LINE * 0.6)
        elif heading := re.match(r"^(#{1,6})\s+(.*?)\s*#*$", stripped):
            level = len(heading[1])
            self.pdf.ln(_LINE * (0.8 if level > 1 else 0))
            self.write(inline_text(heading[2]), size=_HEADING_SIZES.get(level, 11), bold=True)
            self.pdf.ln(_LINE * 0.3)
        elif re.fullmatch(r"(\*\s*){3,}|(-\s*){3,}|(_\s*){3,}", stripped):
            y = self.pdf.get_y() + 1
            self.pdf.line(self.pdf.l_margin, y, self.pdf.w - self.pdf.r_margin, y)
            self.pdf.ln(3)
        elif re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", stripped):
            return  # The separator row of a table.
        elif stripped.startswith("|"):
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            self.write(inline_text("   ".join(cells)), size=9.5)
        elif bullet := re.match(r"^(\s*)[-*+]\s+(.*)$", line):
            indent = "    " * (len(bullet[1]) // 2)
            self.write(f"{indent}\u2022 {inline_text(bullet[2])}", size=_BODY_SIZE)
        elif stripped.startswith(">"):
            self.write(inline_text(stripped.lstrip("> ")), size=_BODY_SIZE)
        else:
            self.write(inline_text(stripped), size=_BODY_SIZE)


def inline_text(text: str) -> str:
    """Markdown inline markup as plain text: links keep their URL, emphasis marks go."""
    text = re.sub(r"!?\[([^\]]*)\]\(([^)\s]+)[^)]*\)", r"\1 (\2)", text)
    text = re.sub(r"<(https?://[^>\s]+)>", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    return re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", r"\1", text)


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
