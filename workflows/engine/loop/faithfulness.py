"""Which sentences of an answer or a report its sources support: a host-side string check.

A small model writes what sounds right: a report of a facts file gains "known for its
delicious pastries", an answer gains a population nobody searched for. The host holds the
sources the text was written from (the user's files, the fetched pages, the request), so it
checks each sentence against them, without a model call:

- every figure (a number, with its decimal separators, percent and scale words read) must
  occur in the sources, in any of its plausible readings ("2.4 million" is 2,400,000);
- every quoted phrase must occur in them word for word, every capitalised name as a word;
- most of the sentence's content words must occur in them (a paraphrase keeps them; an
  invented sentence does not).

What a string check can and cannot prove, said wherever its verdict is shown: a figure or a
word that is not in the sources was not taken from them; one that is in them may still be
used wrongly (the right number for the wrong thing), which only reading can tell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CAVEAT = (
    "a string check: what it flags is not in the sources; what it passes may still be "
    "misread from them"
)
"""What the check can and cannot prove, in the words shown with its verdict."""
MIN_FOUND = 0.5
"""The share of a sentence's content words the sources must hold for it to count as supported."""
MIN_WORDS = 3
"""Sentences with fewer content words are judged by their figures, names and quotes only."""

_SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "trillion": 1e12,
}
_NUMBER = re.compile(
    r"(?<![\w.,/#-])(?:[$€£¥]\s?)?(\d+(?:[.,]\d+)*)(?:st|nd|rd|th)?"
    r"(?:\s?(%|percent\b|per cent\b))?"
    r"(?:\s?(thousand|millions?|billions?|trillion|mn|bn|k|m)\b)?"
    r"(?![\w])"
)
"""A figure: digits with separators, an ordinal ending, percent, a scale word; not part of a
word or an identifier (H2O, round1_task2, v1.2.3 are not figures)."""
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)
_NAME = re.compile(r"\b[A-Z][\w'’-]*[a-z][\w'’-]*(?:\s+[A-Z][\w'’-]*[a-z][\w'’-]*)*")
_QUOTE = re.compile(r"[“\"]([^“”\"\n]{8,200})[”\"]")
_URL = re.compile(r"<?https?://\S+>?|`[^`\n]*`|\[([^\]\n]*)\]\([^)\n]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[)\]*_\"”’]*\s+(?=[^a-z\s])")
_ABBREVIATION = re.compile(r"(?:\b(?:pp?|no|nr|fig|vol|ch|sec|e\.g|i\.e|cf|approx|ca|vs)\.)$", re.I)
"""Where a full stop ends an abbreviation, not a sentence ("p. 3", "e.g. 12")."""
_CITATION = re.compile(
    r"\b(?:pp?\.|pages?|sections?|§|chapters?|slides?|lines?|rows?|items?|steps?|fig\.|"
    r"figures?|tables?|sources?|parts?)\s*\d+(?:\s*[-–,]\s*\d+)*",
    re.IGNORECASE,
)
"""A reference into a document (page 3, p. 3-4, section 2, source 1): where a fact comes from,
not a figure it states."""
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_STOP_WORDS = """
    about above after again against also although among another because been before being
    below between both could does doing down during each either else even every from further
    have having here hers herself himself into itself just least less more most much must
    neither none once only other ought ours ourselves over same shall should some such than
    that their theirs them themselves then there these they this those through thus under
    until upon very what when where whether which while whom whose will with within without
    would your yours yourself yourselves report summary summarise summarize summarises
    summarizes summarised summarized document documents overview section sections following
    information details detail include includes including provide provides provided mention
    mentions mentioned state states stated note notes noted according based given shown show
    shows list listed key main points point file files text attached source sources answer
    request user here
"""
_STOP = frozenset(_STOP_WORDS.split())
"""Words a sentence may use without taking them from a source: grammar, and how reports and
answers speak of themselves."""
_NOT_NAMES = """
    The This That These Those There Here It Its In On At For From With By Of To And Or But
    If When While As An A I We You They He She Our Your Their My His Her Please Note Also
    However Overall Summary Report Sources Source Markdown Answer Yes No Not All Each Both
    Key Main Next Total Today Task Step Document Documents Notes Project
"""
_COMMON_NAMES = frozenset(_NOT_NAMES.split())
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

    @property
    def checked(self) -> bool:
        """Whether there is anything to check: enough content words, or a figure, a name or a
        quote (a short sentence like "Here it is." is neither supported nor not)."""
        return self.words >= MIN_WORDS or bool(self.figures or self.names or self.quotes)

    @property
    def invented(self) -> bool:
        """A figure or a quote the sources do not hold: something precise that was not taken
        from them."""
        return bool(self.figures or self.quotes)

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
    parts = [*claim.figures, *(f"“{q}”" for q in claim.quotes), *claim.names]
    return f" ({', '.join(parts[:4])})" if parts else ""


# --- Reading ------------------------------------------------------------------------------


def figure_values(number: str, unit: str = "", scale: str = "") -> set[float]:
    """Every value a written number may stand for: thousands or decimal separators read both
    ways where they are ambiguous, with its scale word applied and without."""
    readings: set[float] = set()
    if "," in number and "." in number:  # the last separator is the decimal one
        decimal = "." if number.rfind(".") > number.rfind(",") else ","
        whole, _, part = number.rpartition(decimal)
        readings.add(float(re.sub(r"[.,]", "", whole) + "." + part))
    else:
        separator = "," if "," in number else "."
        groups = number.split(separator)
        if len(groups) == 1:
            readings.add(float(number))
        else:
            if all(len(g) == 3 for g in groups[1:]):
                readings.add(float("".join(groups)))  # thousands separators
            if len(groups) == 2:
                readings.add(float(".".join(groups)))  # a decimal separator
    scaled = _SCALES.get(scale.lower(), 1.0)
    return {round(v * s, 6) for v in readings for s in {1.0, scaled}}


def figures_in(text: str) -> list[tuple[str, set[float]]]:
    """The figures of a text, each as written and with the values it may stand for."""
    found = []
    plain = _CITATION.sub(" ", _URL.sub(lambda m: m.group(1) or " ", text))
    for match in _NUMBER.finditer(plain):
        values = figure_values(match.group(1), match.group(2) or "", match.group(3) or "")
        if values:
            found.append((match.group(0).strip(), values))
    return found


def stem(word: str) -> str:
    """A word's rough stem, enough for a paraphrase to meet its source: lower case, without
    a plural or verb ending."""
    word = word.lower().replace("’", "'").removesuffix("'s")
    for ending in ("ies", "ing", "ed", "es", "ly", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    return word


def content_words(text: str) -> list[str]:
    """The words that carry a sentence's meaning, stemmed (four letters and more, no grammar
    or words reports use about themselves)."""
    words = _WORD.findall(_URL.sub(lambda m: m.group(1) or " ", text))
    return [stem(w) for w in words if len(w) >= 4 and w.lower() not in _STOP]


@dataclass(frozen=True)
class Sources:
    """The sources' words, figures and text, read once for every sentence."""

    words: frozenset[str]
    values: frozenset[float]
    text: str
    """Lower case, whitespace collapsed."""
    count: int

    @classmethod
    def of(cls, texts: Iterable[str]) -> Sources:
        """Read the sources."""
        kept = [t for t in texts if t and t.strip()]
        joined = "\n".join(kept)
        values = {v for _, found in figures_in(joined) for v in found}
        words = frozenset(content_words(joined)) | frozenset(
            stem(w) for w in _WORD.findall(joined) if len(w) >= 4
        )
        return cls(words, frozenset(values), " ".join(joined.lower().split()), len(kept))

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


def pieces(text: str) -> list[tuple[int, int]]:
    """Where each sentence, list item or table row of a Markdown text is: (start, end).
    Headings, code blocks, quoted notes and horizontal rules are left out."""
    spans: list[tuple[int, int]] = []
    offset, fenced = 0, False
    for line in text.splitlines(keepends=True):
        start, body = offset, line.rstrip("\n")
        offset += len(line)
        stripped = body.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith(("#", ">", "---", "|---", "| ---")):
            continue
        lead = len(body) - len(body.lstrip())
        if mark := _LIST_MARK.match(body):
            lead = mark.end()
        cursor = start + lead
        for part in sentences(body[lead:]):
            if part.strip():
                at = text.find(part, cursor)
                spans.append((at, at + len(part.rstrip())))
                cursor = at + len(part)
    return spans


def sentences(line: str) -> list[str]:
    """A line's sentences (a full stop after an abbreviation does not end one)."""
    parts, begun = [], 0
    for end in _SENTENCE_END.finditer(line):
        if not _ABBREVIATION.search(line[begun : end.start()]):
            parts.append(line[begun : end.start()])
            begun = end.end()
    return [*parts, line[begun:]]


def check_claim(sentence: str, start: int, sources: Sources) -> Claim:
    """One sentence against the sources."""
    figures = tuple(
        written for written, values in figures_in(sentence) if not values & sources.values
    )
    quotes = tuple(q for q in _QUOTE.findall(sentence) if not sources.holds_phrase(q))
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
    )


def names_in(sentence: str) -> list[str]:
    """The capitalised names of a sentence, not counting its first word (which is capitalised
    anyway) nor words that are capitalised for other reasons."""
    plain = _URL.sub(lambda m: m.group(1) or " ", sentence)
    first = re.match(r"\W*\w+", plain)
    skip = first.end() if first else 0
    names = []
    for match in _NAME.finditer(plain):
        words = [w for w in match.group(0).split() if w not in _COMMON_NAMES]
        if match.start() < skip:
            words = words[1:] if match.group(0).split()[0] not in _COMMON_NAMES else words
        if words:
            names.append(" ".join(words))
    return names


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
    if not _LIST_MARK.sub("", before).strip(" |") and not after.strip(" |"):
        return line_start, min(line_end + 1, len(text)), ""
    return start, end, ""
