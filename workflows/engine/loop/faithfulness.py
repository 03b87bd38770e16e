"""Which sentences of an answer or a report its sources support: a host-side string check.

A small model writes what sounds right: a report of a facts file gains "known for its
delicious pastries", an answer gains a population nobody searched for. The host holds the
sources the text was written from (the user's files, the fetched pages, the request), so it
checks each sentence against them, without a model call:

- every figure (a number, with its decimal separators, percent and scale words read) must
  occur in the sources, in any of its plausible readings ("2.4 million" is 2,400,000), and
  beside at least one of the sentence's words there (the sentence, or the two before it):
  "the previous 12 engineers" is not supported by "the meeting is on 12 June";
- every quoted phrase must occur in them word for word, every capitalised name as a word;
- most of the sentence's content words must occur in them (a paraphrase keeps them; an
  invented sentence does not).

What a string check can and cannot prove, said wherever its verdict is shown: a figure or a
word that is not in the sources was not taken from them; one that is in them may still be
used wrongly (the right number for the wrong thing), which only reading can tell.

How a text is read (its sentences, figures, names and content words) is `claim_text.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workflows.engine.loop.claim_text import (
    LIST_MARK,
    QUOTE,
    WORD,
    content_words,
    figures_in,
    names_in,
    pieces,
    stem,
)

CAVEAT = (
    "a string check: what it flags is not in the sources; what it passes may still be "
    "misread from them"
)
"""What the check can and cannot prove, in the words shown with its verdict."""
MIN_FOUND = 0.5
"""The share of a sentence's content words the sources must hold for it to count as supported."""
MIN_WORDS = 3
"""Sentences with fewer content words are judged by their figures, names and quotes only."""

"""Capitalised words that are not names (sentence openers, a report's own headings)."""


@dataclass(frozen=True)
class Claim:
    """One sentence (or list item, or table row) of the text, as checked."""

    text: str
    start: int
    """Where it starts in the checked text."""
    end: int
    words: int
    """Its content words."""
    found: float
    """The share of them the sources hold (1.0 when it has none)."""
    figures: tuple[str, ...] = ()
    """Its figures that the sources do not hold, as written."""
    names: tuple[str, ...] = ()
    """Its capitalised names that the sources do not hold."""
    quotes: tuple[str, ...] = ()
    """Its quoted phrases that the sources do not hold word for word."""
    elsewhere: tuple[str, ...] = ()
    """Its figures that the sources hold only beside other words: the right number for
    another thing ("the previous 12 engineers" from "the meeting is on 12 June")."""

    @property
    def checked(self) -> bool:
        """Whether there is anything to check: enough content words, or a figure, a name or a
        quote (a short sentence like "Here it is." is neither supported nor not)."""
        return self.words >= MIN_WORDS or bool(
            self.figures or self.names or self.quotes or self.elsewhere
        )

    @property
    def invented(self) -> bool:
        """A figure or a quote the sources do not hold (or hold only for another thing):
        something precise that was not taken from them."""
        return bool(self.figures or self.quotes or self.elsewhere)

    @property
    def supported(self) -> bool:
        """Its figures, names and quotes are in the sources, and so are most of its words."""
        if self.invented or self.names:
            return False
        return self.words < MIN_WORDS or self.found >= MIN_FOUND


@dataclass(frozen=True)
class SourceCheck:
    """The verdict on a text: each checked sentence, and how many the sources support."""

    claims: tuple[Claim, ...]
    sources: int
    """How many sources it was checked against."""

    @property
    def checked(self) -> list[Claim]:
        """The sentences with something to check."""
        return [claim for claim in self.claims if claim.checked]

    @property
    def unsupported(self) -> list[Claim]:
        """The checked sentences the sources do not support."""
        return [claim for claim in self.checked if not claim.supported]

    def figures(self) -> list[str]:
        """Every figure the sources do not hold, once, in order."""
        return list(dict.fromkeys(f for claim in self.claims for f in claim.figures))

    def summary(self) -> str:
        """How much the sources support, in one sentence for people."""
        checked, unsupported = self.checked, self.unsupported
        verb = "is" if len(checked) - len(unsupported) == 1 else "are"
        head = (
            f"{len(checked) - len(unsupported)} of {counted(len(checked), 'sentence')} {verb} "
            f"supported by the {counted(self.sources, 'source')}"
        )
        if figures := self.figures():
            head += "; figures not found in them: " + ", ".join(f"“{f}”" for f in figures[:8])
        if elsewhere := list(dict.fromkeys(f for c in self.claims for f in c.elsewhere)):
            head += "; figures they give only for something else: " + ", ".join(
                f"“{f}”" for f in elsewhere[:8]
            )
        return head + "."

    def note(self) -> str:
        """The reader's note under an answer: the summary, the sentences not supported (the
        first few), and what a string check can prove ("" when nothing was checked)."""
        if not self.checked:
            return ""
        lines = [f"Checked against the sources: {self.summary()}"]
        for claim in self.unsupported[:5]:
            lines.append(f"Not found in the sources: “{shortened(claim.text)}”{why(claim)}")
        lines.append(f"({CAVEAT}.)")
        return "\n\n" + "\n".join(f"> {line}  " for line in lines).rstrip()


def counted(number: int, noun: str) -> str:
    """'1 source', '3 sources'."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def shortened(text: str, limit: int = 160) -> str:
    """A sentence on one line, cut at `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def why(claim: Claim) -> str:
    """What of a sentence is not in the sources, in parentheses ("" for its words alone)."""
    parts = [*claim.figures, *(f"{f}, given for something else" for f in claim.elsewhere)]
    parts += [*(f"“{q}”" for q in claim.quotes), *claim.names]
    return f" ({', '.join(parts[:4])})" if parts else ""


# --- The sources ------------------------------------------------------------------------


@dataclass(frozen=True)
class Sources:
    """The sources' words, figures and text, read once for every sentence."""

    words: frozenset[str]
    values: frozenset[float]
    text: str
    """Lower case, whitespace collapsed."""
    count: int
    places: tuple[tuple[frozenset[float], frozenset[str]], ...] = ()
    """Each sentence's figures, with the content words around them (that sentence and the
    two before it, where a table's header or a list's lead-in says what a figure is)."""

    @classmethod
    def of(cls, texts: Iterable[str]) -> Sources:
        """Read the sources."""
        kept = [t for t in texts if t and t.strip()]
        joined = "\n".join(kept)
        values = {v for _, found in figures_in(joined) for v in found}
        words = frozenset(content_words(joined)) | frozenset(
            stem(w) for w in WORD.findall(joined) if len(w) >= 4
        )
        places = []
        for text in kept:
            spans = [text[a:b] for a, b in pieces(text)]
            for index, piece in enumerate(spans):
                if found := {v for _, vs in figures_in(piece) for v in vs}:
                    around = " ".join(spans[max(0, index - 2) : index + 1])
                    places.append((frozenset(found), frozenset(content_words(around))))
        flat = " ".join(joined.lower().split())
        return cls(words, frozenset(values), flat, len(kept), tuple(places))

    def gives_elsewhere(self, values: set[float], words: set[str]) -> bool:
        """Whether the sources hold a figure only beside none of a sentence's words (judged
        when the sentence has two or more words the sources hold: else there is no telling)."""
        if len(words & self.words) < 2 or not self.places:
            return False
        return not any(values & found and words & near for found, near in self.places)

    def holds_phrase(self, phrase: str) -> bool:
        """Whether the sources hold a phrase word for word (case and spacing aside)."""
        flat = " ".join(phrase.lower().split()).strip(" .,;:")
        return bool(flat) and flat in self.text

    def holds_name(self, name: str) -> bool:
        """Whether the sources hold a name as a word (each of its words, for a long one)."""
        if self.holds_phrase(name):
            return True
        parts = name.split()
        return len(parts) > 1 and all(self.holds_word(part) for part in parts)

    def holds_word(self, word: str) -> bool:
        """Whether the sources hold a word on its own (not inside another)."""
        return re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", self.text) is not None


# --- Checking -----------------------------------------------------------------------------


def check_claim(sentence: str, start: int, sources: Sources) -> Claim:
    """One sentence against the sources."""
    written_figures = figures_in(sentence)
    figures = tuple(written for written, values in written_figures if not values & sources.values)
    context = set(content_words(sentence))
    elsewhere = tuple(
        written
        for written, values in written_figures
        if values & sources.values and sources.gives_elsewhere(values, context)
    )
    quotes = tuple(q for q in QUOTE.findall(sentence) if not sources.holds_phrase(q))
    names = tuple(
        dict.fromkeys(
            name
            for name in names_in(sentence)
            if not sources.holds_name(name) and name not in quotes
        )
    )
    words = content_words(sentence)
    found = sum(word in sources.words for word in words) / len(words) if words else 1.0
    return Claim(
        text=sentence,
        start=start,
        end=start + len(sentence),
        words=len(words),
        found=found,
        figures=tuple(dict.fromkeys(figures)),
        names=names,
        quotes=quotes,
        elsewhere=tuple(dict.fromkeys(elsewhere)),
    )


def check_sources(text: str, sources: Sequence[str], *, context: Sequence[str] = ()) -> SourceCheck:
    """Check every sentence of `text` against `sources` (the documents it was written from)
    and `context` (the request, a title: a figure the user gave is a sourced one, though the
    request is not counted as a source)."""
    read = Sources.of([*sources, *context])
    claims = tuple(check_claim(text[a:b], a, read) for a, b in pieces(text))
    return SourceCheck(claims=claims, sources=len([s for s in sources if s.strip()]))


def without_invented(text: str, check: SourceCheck) -> tuple[str, list[Claim]]:
    """The corrective pass where it is cheap (a report, written to a file): the sentences with
    a figure or a quote the sources do not hold are taken out (a list item or table row that
    held nothing else goes with them), the other unsupported ones marked where they stand.
    Returns the text and the sentences taken out."""
    removed = [claim for claim in check.checked if claim.invented]
    marked = [claim for claim in check.unsupported if not claim.invented]
    edits = [whole_line(text, c.start, c.end) for c in removed]
    edits += [(c.end, c.end, " *(not found in the sources)*") for c in marked]
    out = text
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + new + out[end:]
    out = re.sub(r"[ \t]{2,}", " ", out)
    return re.sub(r"\n{3,}", "\n\n", out).strip(), removed


def whole_line(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The edit that takes out text[start:end]: its whole line (a list item's mark, a table
    row's pipes and the line break too) when nothing else stands on it."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before, after = text[line_start:start], text[end:line_end]
    if not LIST_MARK.sub("", before).strip(" |") and not after.strip(" |"):
        return line_start, min(line_end + 1, len(text)), ""
    return start, end, ""
