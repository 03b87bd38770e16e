"""Small, deterministic enrichment of web results: relevance, key points, entities.

No model involved: relevance is query-term overlap (blended with the provider's own score
when there is one), key points are the sentences that mention the query most, entities are
capitalised multi-word names and numbers with their units. Cheap, repeatable and honest
about what it is.
"""

from __future__ import annotations

import re
from collections import Counter

_STOPWORDS = (
    "a an and are as at be by for from has have how in into is it its of on or that the their "
    "this to was were what when where which who why will with about after all also any can do "
    "does more most new not over than then there these they those up your you we our i me my "
    "der die das und ein eine ist im le la les des et un une el los"
)
STOPWORDS = frozenset(_STOPWORDS.split())

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKUP = re.compile(r"^[#>*\-+\s|]+|[*_`]+")
_UPPER = "A-ZÀ-ÖØ-Þ"
_NAME = re.compile(
    rf"\b[{_UPPER}][\w'’-]*(?:\s+(?:(?:of|for|and|de|la|van|von|der|du)\s+)?[{_UPPER}][\w'’-]*)+"
)
_NUMBER = re.compile(
    r"(?<![\w.])\d[\d,.]*\d?(?:\s?(?:%|percent|per cent|million|billion|trillion|thousand|"
    r"gigawatts?|megawatts?|GW|MW|kWh|km|kg|tonnes?|USD|EUR|dollars|euros))?(?!\w)"
)


def terms(text: str) -> set[str]:
    """The lower-cased content words of a text."""
    return {word for word in _WORD.findall(text.lower()) if len(word) > 1} - STOPWORDS


def relevance(query: str, title: str, text: str, provider_score: float | None = None) -> float:
    """How well a page answers the query, from 0 to 1 (two decimals)."""
    wanted = terms(query)
    if not wanted:
        score = 0.0
    else:
        in_body = len(wanted & terms(f"{title} {text[:50_000]}")) / len(wanted)
        in_title = len(wanted & terms(title)) / len(wanted)
        score = 0.75 * in_body + 0.25 * in_title
    if provider_score is not None:
        score = 0.5 * score + 0.5 * min(max(provider_score, 0.0), 1.0)
    return round(score, 2)


def sentences(text: str) -> list[str]:
    """The sentences of a text, markdown markers removed."""
    found = []
    for piece in _SENTENCE_END.split(text):
        sentence = " ".join(_MARKUP.sub("", piece).split())
        if len(sentence) >= 20:
            found.append(sentence)
    return found


def key_points(text: str, query: str, limit: int = 3, width: int = 240) -> list[str]:
    """The sentences mentioning the query most, in their original order, clipped to width."""
    wanted = terms(query)
    candidates = sentences(text[:50_000])
    ranked = sorted(range(len(candidates)), key=lambda i: (-len(wanted & terms(candidates[i])), i))[
        :limit
    ]
    return [_clip(candidates[i], width) for i in sorted(ranked)]


def entities(text: str, limit: int = 8) -> list[str]:
    """Capitalised multi-word names and numbers with units, most frequent first."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    sample = text[:50_000]
    for match in [*_NAME.finditer(sample), *_NUMBER.finditer(sample)]:
        entity = _trim_name(match.group().strip(" ,."))
        if len(entity) >= 2:  # a lone digit is noise
            counts[entity] += 1
            first.setdefault(entity, match.start())
    ordered = sorted(counts, key=lambda entity: (-counts[entity], first[entity]))
    return ordered[:limit]


def _trim_name(name: str) -> str:
    """Drop a leading capitalised stopword ("The Baltic Energy Agency" -> "Baltic ...")."""
    words = name.split()
    if len(words) > 2 and words[0].lower() in STOPWORDS:
        words = words[1:]
    return " ".join(words)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
