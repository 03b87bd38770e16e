"""What each recorded run cost under a price sheet and a cache, and the medians per system and
catalog size, for bench/vs_react.py and bench/mcp_catalog.py.

Each call is priced by the model its request named: the main model's sheet, or the small
model's for requests to the small model when per-stage prices are asked for. Caches are per
system, catalog size and model: warm (kept across the tasks of a size, the unmeasured warm-up
task first) or cold (fresh for every task).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.caching import PrefixCache, cache_for
from bench.rendering import ENCODING, Billed, billed, old_serialised
from bench.sheets import SIMPLE, Sheet

if TYPE_CHECKING:
    from bench.model_server import Call
    from bench.vs_react import Run

SMALL = "small"
"""The model name requests to the small model carry (the main model's is "main")."""


@dataclass(frozen=True)
class Pricing:
    """A sheet for the main model, optionally one for the small model, and a cache scope."""

    main: Sheet
    small: Sheet | None = None
    cache: str = "warm"
    """"warm": one cache per system, size and model across tasks; "cold": one per task."""

    def sheet_of(self, call: Call) -> Sheet:
        """The sheet that prices a call: by the model its request named."""
        return self.small if self.small is not None and call.model == SMALL else self.main

    @property
    def label(self) -> str:
        small = f" + {self.small.name} (small)" if self.small else ""
        return f"{self.main.name}{small}, {self.cache} cache"


@dataclass
class KindTally:
    """One call kind's share of a run."""

    calls: int = 0
    input: int = 0
    cached: int = 0
    output: int = 0
    seconds: float = 0.0
    """Modelled model time of these calls (fixed latency plus output tokens)."""


@dataclass
class Tally:
    """What one run of one system cost, and what it did."""

    calls: int = 0
    input: int = 0
    cached: int = 0
    written: int = 0
    output: int = 0
    cost: float = 0.0
    cost_uncached: float = 0.0
    kinds: dict[str, KindTally] = field(default_factory=lambda: defaultdict(KindTally))
    actions: int = 0
    seconds: float = 0.0
    """Measured time to the whole final answer."""

    @property
    def cached_share(self) -> float:
        return self.cached / self.input if self.input else 0.0

    @property
    def per_action(self) -> float:
        return self.calls / max(1, self.actions)


class Renders:
    """Each recorded request rendered once per provider."""

    def __init__(self) -> None:
        self.done: dict[tuple[int, str], Billed] = {}

    def __call__(self, call: Call, provider: str) -> Billed:
        key = (id(call), provider)
        if key not in self.done:
            self.done[key] = billed(call.body, provider)
        return self.done[key]


def tally(
    calls: list[Call], results: list[Run], pricing: Pricing, renders: Renders
) -> dict[tuple[str, int, int], Tally]:
    """Per (system, size, run): calls, tokens and cost, requests priced in arrival order."""
    caches: dict[tuple[Any, ...], Any] = {}
    tallies: dict[tuple[str, int, int], Tally] = defaultdict(Tally)
    for call in calls:
        sheet = pricing.sheet_of(call)
        request = renders(call, sheet.provider)
        scope = (call.system, call.size, sheet.name)
        scope += (call.run,) if pricing.cache == "cold" else ()
        if scope not in caches:
            caches[scope] = cache_for(sheet)
        hit = caches[scope].request(request)
        size = len(request.tokens)
        entry = tallies[call.system, call.size, call.run]
        entry.calls += 1
        entry.input += size
        entry.cached += hit.cached
        entry.written += hit.written
        entry.output += call.output_tokens
        entry.cost += sheet.scale * sheet.cost(
            input=size, cached=hit.cached, written=hit.written, output=call.output_tokens
        )
        entry.cost_uncached += sheet.scale * sheet.cost(
            input=size, cached=0, written=0, output=call.output_tokens
        )
        kind = entry.kinds[call.kind]
        kind.calls += 1
        kind.input += size
        kind.cached += hit.cached
        kind.output += call.output_tokens
        kind.seconds += call.seconds
    for run in results:
        entry = tallies[run.system, run.size, run.run]
        entry.actions, entry.seconds = run.actions, run.seconds
    return tallies


def old_tally(calls: list[Call], results: list[Run]) -> dict[tuple[str, int, int], Tally]:
    """The earlier yardstick, for continuity: tools and response formats as compact JSON,
    answers as the policy wrote them (spaced, keys left out), one cache per system across
    every catalog size, the simple sheet."""
    caches: dict[str, PrefixCache] = defaultdict(lambda: PrefixCache(SIMPLE.cache_min))
    tallies: dict[tuple[str, int, int], Tally] = defaultdict(Tally)
    for call in calls:
        tokens = np.array(ENCODING.encode_ordinary(old_serialised(call.body)), dtype=np.int64)
        hit = caches[call.system].request(Billed(tokens, 0))
        entry = tallies[call.system, call.size, call.run]
        entry.calls += 1
        entry.input += len(tokens)
        entry.cached += hit.cached
        entry.output += call.old_output_tokens
        entry.cost += SIMPLE.cost(
            input=len(tokens), cached=hit.cached, written=0, output=call.old_output_tokens
        )
    for run in results:
        entry = tallies[run.system, run.size, run.run]
        entry.actions, entry.seconds = run.actions, run.seconds
    return tallies


# --- Medians -------------------------------------------------------------------------------

METRICS = (
    "calls", "per_action", "input", "cached_share", "output", "cost_uncached", "cost", "seconds",
    "actions",
)  # fmt: skip


@dataclass
class Row:
    """One system at one size: medians over its solved runs."""

    solved: str
    medians: dict[str, float]
    kinds: dict[str, KindTally]
    """Kind -> medians of its calls, input, cached and output tokens, and modelled seconds."""


def rows(results: list[Run], tallies: dict[tuple[str, int, int], Tally]) -> dict:
    """(system, size) -> Row, over the solved runs (every run when none was solved)."""
    table = {}
    for system, size in sorted({(r.system, r.size) for r in results}):
        mine = [r for r in results if r.system == system and r.size == size]
        good = [tallies[system, size, r.run] for r in mine if r.solved]
        good = good or [tallies[system, size, r.run] for r in mine]
        names = {kind for t in good for kind in t.kinds}
        table[system, size] = Row(
            solved=f"{sum(r.solved for r in mine)}/{len(mine)}",
            medians={name: statistics.median(getattr(t, name) for t in good) for name in METRICS},
            kinds={
                kind: KindTally(
                    **{
                        name: statistics.median(getattr(t.kinds[kind], name) for t in good)
                        for name in ("calls", "input", "cached", "output", "seconds")
                    }
                )
                for kind in names
            },
        )
    return table
