"""How the demo model reads the facts of a call (which documents to read) and the documents'
own text, and shapes the extractive text it answers with (leading sentences, markdown blocks,
streamed pieces)."""

from __future__ import annotations

import re

from workflows.engine.model.request import Facts

_PRODUCED = re.compile(r"^round\d+_task\d+_action\d+_")
_CUT = "…"
_ABOUT_FILES = re.compile(
    r"\b(document|file|upload|attach|notes?|report|summar|extract|pdf|docx?)", re.IGNORECASE
)
"""A request that speaks of files (the demo's stand-in for understanding it)."""


def doc_lists(facts: Facts) -> tuple[list[str], list[str]]:
    """(uploaded, produced) docList labels of the workflow's documents. The uploads are the
    ones sent with this message; without any, the newest earlier one when the request speaks
    of files, else none (a follow-up question is answered, not a report written again on
    every earlier upload)."""
    labels = list(dict.fromkeys(ref.label for ref in facts.documents))
    produced = [label for label in labels if _PRODUCED.match(label)]
    uploads = [label for label in labels if not _PRODUCED.match(label)]
    if facts.sent_label() in uploads:
        return [facts.sent_label()], produced
    if uploads and _ABOUT_FILES.search(facts.request):
        return [uploads[-1]], produced
    return [], produced


_META = re.compile(r"_[^_\n]{1,160}_")
_FILE_HEADING = re.compile(r"#+\s+\S+\.\w{2,5}\b")
_SECTION_HEADING = re.compile(r"#+\s+(?:Page \d+|Sheet \d+|Section \d+|Text|Content)\b")
READABLE = (".md", ".txt", ".csv", ".json")
"""The documents whose text the demo model quotes in its answer."""
_HEADING = re.compile(r"(?:^|\s)(#{1,6})\s+")
_ITEM = re.compile(r"\s+(?=(?:[-*+]|\d{1,3}[.)])\s)")
_ITEM_START = re.compile(r"(?:[-*+]|\d{1,3}[.)])\s")
_NUMBERED = re.compile(r"\d{1,3}[.)]\s")
_SENTENCE_END = (".", "!", "?", ":")
_PIECE = re.compile(r"\s*\S{1,12}")
TITLE = re.compile(r"^\s*#\s+[^#]*")
"""A document's title heading (a report's), up to its first section."""


def readable_text(preview: str) -> str:
    """A preview of extracted Markdown without its metadata lines and section markers (the
    document's own headings stay)."""
    text = _FILE_HEADING.sub(" ", preview)
    text = _META.sub(" ", text)
    text = _SECTION_HEADING.sub(" ", text)
    return " ".join(text.split())


def leading_sentences(text: str, count: int = 2) -> str:
    """The first sentences of a text, whitespace collapsed."""
    plain = " ".join(re.sub(r"(^|\s)#+\s", " ", text).split())
    sentences = re.split(r"(?<=[.!?])\s+", plain)
    return " ".join(sentences[:count])[:400]


def markdown_blocks(flat: str) -> list[str]:
    """The headings, paragraphs and list items of a preview whose line breaks were
    collapsed. Headings move two levels down (they stand under the document's name); a
    heading whose end cannot be told stays a paragraph."""
    parts = _HEADING.split(flat)
    blocks = _paragraph_and_items(parts[0])
    for hashes, body in zip(parts[1::2], parts[2::2], strict=True):
        heading, rest = _heading_and_rest(body)
        if heading:
            blocks.append("#" * min(6, len(hashes) + 2) + " " + heading)
        blocks += _paragraph_and_items(rest)
    return blocks


def _heading_and_rest(body: str) -> tuple[str, str]:
    """A heading's text and what follows it: a short heading ends at the first list item; a
    heading in sentence case ("Quarterly notes") ends before the next capitalised word."""
    head, *after = _ITEM.split(body, maxsplit=1)
    tail = after[0] if after else ""
    words = head.split()
    if 0 < len(words) <= 8 and not any(word.endswith(_SENTENCE_END) for word in words):
        return " ".join(words), tail
    capital = next((i for i, word in enumerate(words[1:10], 1) if word[:1].isupper()), 0)
    if capital > 1 and not any(word.endswith(_SENTENCE_END) for word in words[:capital]):
        return " ".join(words[:capital]), " ".join([*words[capital:], tail])
    return "", body


def _paragraph_and_items(text: str) -> list[str]:
    """A paragraph and the list items after it. A marker starts an item at the start, after
    a sentence's end or after another item of its kind; elsewhere ("grew - a lot", "fell 3.
    Good.") it stays a dash or a number."""
    blocks: list[str] = []
    for piece in _ITEM.split(text.strip()):
        if not piece:
            continue
        numbered = _NUMBERED.match(piece) is not None
        after_item = bool(blocks) and (
            _NUMBERED.match(blocks[-1]) is not None
            if numbered
            else _ITEM_START.match(blocks[-1]) is not None
        )
        if not blocks or after_item or blocks[-1].endswith(_SENTENCE_END):
            blocks.append(piece)
        else:
            blocks[-1] += " " + piece
    return blocks


def whole_blocks(blocks: list[str], limit: int = 900) -> list[str]:
    """Blocks that end where a sentence or an item does: at most about `limit` characters,
    and a block cut off (a preview ends with "…", or the limit falls inside it) keeps its
    whole sentences or goes; a heading left with nothing under it goes too."""
    kept: list[str] = []
    size = 0
    for block in blocks:
        cut = block.endswith(_CUT) or size + len(block) > limit
        if cut:
            body = block.removesuffix(_CUT)[: max(0, limit - size)]
            ends = [m.end() for m in re.finditer(r"[.!?](?=\s|$)", body)]
            if ends and not _ITEM_START.match(block) and not block.startswith("#"):
                kept.append(body[: ends[-1]])
            break
        kept.append(block)
        size += len(block)
    while kept and kept[-1].startswith("#"):
        kept.pop()
    return kept


def join_blocks(blocks: list[str]) -> str:
    """Markdown blocks as text: list items on consecutive lines, other blocks apart."""
    text = ""
    for block in blocks:
        tight = text and _ITEM_START.match(block) and _ITEM_START.match(text.rsplit("\n", 1)[-1])
        text += ("\n" if tight else "\n\n" if text else "") + block
    return text


def stream_pieces(text: str) -> list[str]:
    """A text in the small pieces a model streams: a word each, long words cut."""
    pieces = _PIECE.findall(text)
    rest = text[len("".join(pieces)) :]
    return [*pieces, rest] if rest else pieces
