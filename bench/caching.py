"""Providers' prompt caches, simulated over the requests a bench recorded.

OpenAI's is automatic: a request reads from the cache the longest prefix it shares with an
earlier request to the same model, in steps of 128 tokens from 1,024 (ideal routing: every
request meets the earlier ones). Anthropic's holds only what a request marks: the prefix up
to its breakpoint is read when an earlier request wrote the same prefix, else written (at the
write premium) when it is long enough for the model. A cache is one scope: the benches keep
one per system, catalog size and model (warm: across the tasks of a size, after a warm-up
task) or one per task (cold).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from bench.rendering import Billed
from bench.sheets import OPENAI_CACHE_STEP, Sheet


@dataclass(frozen=True)
class Hit:
    """What one request read from the cache and wrote to it (tokens)."""

    cached: int = 0
    written: int = 0


class PrefixCache:
    """OpenAI's automatic prefix cache."""

    def __init__(self, minimum: int, step: int = OPENAI_CACHE_STEP) -> None:
        self.minimum, self.step = minimum, step
        self.seen: list[np.ndarray] = []

    def request(self, billed: Billed) -> Hit:
        """Cached tokens of this request (then remember it)."""
        tokens, best = billed.tokens, 0
        for earlier in self.seen:
            n = min(len(earlier), len(tokens))
            if n <= best:
                continue
            different = np.flatnonzero(earlier[:n] != tokens[:n])
            best = max(best, int(different[0]) if different.size else n)
        self.seen.append(tokens)
        hit = best // self.step * self.step
        return Hit(cached=hit if hit >= self.minimum else 0)


class BreakpointCache:
    """Anthropic's cache: entries written at breakpoints, read by an exact prefix match."""

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum
        self.entries: set[str] = set()

    def request(self, billed: Billed) -> Hit:
        """Tokens read up to the breakpoint, or written there (then remembered)."""
        if billed.breakpoint < self.minimum:
            return Hit()
        key = hashlib.sha1(billed.tokens[: billed.breakpoint].tobytes()).hexdigest()
        if key in self.entries:
            return Hit(cached=billed.breakpoint)
        self.entries.add(key)
        return Hit(written=billed.breakpoint)


def cache_for(sheet: Sheet) -> PrefixCache | BreakpointCache:
    """A new, empty cache of the sheet's provider."""
    if sheet.provider == "anthropic":
        return BreakpointCache(sheet.cache_min)
    return PrefixCache(sheet.cache_min)
