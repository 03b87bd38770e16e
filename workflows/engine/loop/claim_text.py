"""How the source check (`faithfulness.py`) reads a text: its sentences, list items and table
rows, its figures (every plausible reading of each), its capitalised names and its content
words (stemmed, stop words aside)."""

from __future__ import annotations

import re

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
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)
_NAME = re.compile(r"\b[A-Z][\w'’-]*[a-z][\w'’-]*(?:\s+[A-Z][\w'’-]*[a-z][\w'’-]*)*")
QUOTE = re.compile(r"[“\"]([^“”\"\n]{8,200})[”\"]")
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
LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
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
    words = WORD.findall(_URL.sub(lambda m: m.group(1) or " ", text))
    return [stem(w) for w in words if len(w) >= 4 and w.lower() not in _STOP]


PROSE_FENCES = {"markdown", "md", "text", "txt"}
"""Fences a model wraps prose in (an answer as a ```markdown block): their lines are read."""


def pieces(text: str) -> list[tuple[int, int]]:
    """Where each sentence, list item or table row of a Markdown text is: (start, end).
    Headings, code blocks, quoted notes and horizontal rules are left out; prose in a
    ```markdown (or md, text) fence is read."""
    spans: list[tuple[int, int]] = []
    offset, fenced, prose = 0, False, False
    for line in text.splitlines(keepends=True):
        start, body = offset, line.rstrip("\n")
        offset += len(line)
        stripped = body.strip()
        if stripped.startswith("```"):
            if fenced:  # a code block ends
                fenced = False
            elif prose and stripped == "```":  # a fence wrapped around prose ends
                prose = False
            elif stripped[3:].strip().lower() in PROSE_FENCES:
                prose = True  # prose a model wrapped in a fence is read as prose
            else:
                fenced = True
            continue
        if fenced or not stripped or stripped.startswith(("#", ">", "---", "|---", "| ---")):
            continue
        lead = len(body) - len(body.lstrip())
        if mark := LIST_MARK.match(body):
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
