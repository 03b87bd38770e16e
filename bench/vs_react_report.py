"""The report of bench/vs_react.py: tokens counted with o200k, a provider's prefix cache
simulated, cost, medians and ratios per system and catalog size, verdicts and plots."""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import bpe_openai
import numpy as np

if TYPE_CHECKING:
    from bench.vs_react import Call, Run

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = {"react": "PowerOn React", "actionplan": "PowerOn Actionplan", "langgraph": "LangGraph"}
PRICE_INPUT, PRICE_CACHED, PRICE_OUTPUT = 1.0, 0.1, 4.0
CACHE_MIN, CACHE_STEP = 1_024, 128
LATENCY_BASE, LATENCY_PER_TOKEN = 0.4, 0.015
ENCODING = bpe_openai.get_encoding("o200k_base")
PLOTS = ROOT / "bench" / "plots"


def count(text: str) -> int:
    """o200k tokens of a text."""
    return len(ENCODING.encode_ordinary(text))


# --- Tokens and cost -----------------------------------------------------------------------


def serialised(body: dict[str, Any]) -> str:
    """A request as a provider counts it: tools or response format first, then the messages."""
    head = body.get("tools") or body.get("response_format")
    parts = [json.dumps(head, separators=(",", ":"), ensure_ascii=False)] if head else []
    for message in body["messages"]:
        parts.append(f"{message['role']}: {message.get('content') or ''}")
        for call in message.get("tool_calls") or []:
            parts.append(f"{call['function']['name']} {call['function']['arguments']}")
    return "\n".join(parts)


class PrefixCache:
    """A provider's prompt cache: the longest token prefix shared with any earlier request."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def cached(self, tokens: np.ndarray) -> int:
        """Cached tokens of this request (then remember it)."""
        best = 0
        for earlier in self.seen:
            n = min(len(earlier), len(tokens))
            if n <= best:
                continue
            different = np.flatnonzero(earlier[:n] != tokens[:n])
            best = max(best, int(different[0]) if different.size else n)
        self.seen.append(tokens)
        hit = best // CACHE_STEP * CACHE_STEP
        return hit if hit >= CACHE_MIN else 0


@dataclass
class Tally:
    """What one run of one system cost, and what it did."""

    calls: int = 0
    input: int = 0
    cached: int = 0
    output: int = 0
    kinds: Counter = field(default_factory=Counter)
    kind_input: Counter = field(default_factory=Counter)
    """Input tokens per call kind."""
    kind_output: Counter = field(default_factory=Counter)
    """Output tokens per call kind."""
    actions: int = 0
    seconds: float = 0.0

    @property
    def cost(self) -> float:
        uncached = self.input - self.cached
        return uncached * PRICE_INPUT + self.cached * PRICE_CACHED + self.output * PRICE_OUTPUT

    @property
    def cost_uncached(self) -> float:
        return self.input * PRICE_INPUT + self.output * PRICE_OUTPUT

    @property
    def cached_share(self) -> float:
        return self.cached / self.input if self.input else 0.0

    @property
    def per_action(self) -> float:
        return self.calls / max(1, self.actions)


def tally(calls: list[Call], results: list[Run]) -> dict[tuple[str, int, int], Tally]:
    """Per (system, size, run): calls, tokens and cost, requests priced in arrival order."""
    caches: dict[str, PrefixCache] = defaultdict(PrefixCache)
    tallies: dict[tuple[str, int, int], Tally] = defaultdict(Tally)
    for call in calls:
        tokens = np.array(ENCODING.encode_ordinary(serialised(call.body)), dtype=np.int64)
        entry = tallies[call.system, call.size, call.run]
        entry.calls += 1
        entry.input += len(tokens)
        entry.cached += caches[call.system].cached(tokens)
        entry.output += call.output_tokens
        entry.kinds[call.kind] += 1
        entry.kind_input[call.kind] += len(tokens)
        entry.kind_output[call.kind] += call.output_tokens
    for run in results:
        entry = tallies[run.system, run.size, run.run]
        entry.actions, entry.seconds = run.actions, run.seconds
    return tallies


# --- Report --------------------------------------------------------------------------------


@dataclass
class Row:
    """One system at one size: medians over its solved runs."""

    solved: str
    medians: dict[str, float]
    kinds: dict[str, tuple[float, float]]
    """Kind -> (calls, input tokens, output tokens)."""


def rows(results: list[Run], tallies: dict[tuple[str, int, int], Tally]) -> dict:
    """(system, size) -> Row."""
    table = {}
    for system in SYSTEMS:
        for size in sorted({r.size for r in results}):
            mine = [r for r in results if r.system == system and r.size == size]
            good = [tallies[system, size, r.run] for r in mine if r.solved]
            good = good or [tallies[system, size, r.run] for r in mine]
            names = {kind for t in good for kind in t.kinds}
            table[system, size] = Row(
                solved=f"{sum(r.solved for r in mine)}/{len(mine)}",
                medians={
                    name: statistics.median(getattr(t, name) for t in good)
                    for name in [*METRICS, "actions"]
                },
                kinds={
                    kind: (
                        statistics.median(t.kinds[kind] for t in good),
                        statistics.median(t.kind_input[kind] for t in good),
                        statistics.median(t.kind_output[kind] for t in good),
                    )
                    for kind in names
                },
            )
    return table


COLUMNS = [
    ("calls", "calls", "{:.0f}"), ("per_action", "calls/act", "{:.2f}"),
    ("input", "input", "{:,.0f}"), ("cached_share", "cached", "{:.0%}"),
    ("output", "output", "{:,.0f}"), ("cost_uncached", "uncached", "{:,.0f}"),
    ("cost", "cost", "{:,.0f}"), ("seconds", "answer s", "{:.2f}"),
]  # fmt: skip
METRICS = [name for name, _, _ in COLUMNS]
RATIOS = {"calls", "per_action", "input", "output", "cost_uncached", "cost", "seconds"}


def print_tables(table: dict, sizes: list[int], runs: int) -> None:
    head = f"{'':<22}{'solved':>7}{'actions':>8}" + "".join(f"{t:>11}" for _, t, _ in COLUMNS)
    for size in sizes:
        print(f"\n{size} tools (medians of {runs} run(s) per system)")
        print(head)
        for system, label in SYSTEMS.items():
            row = table[system, size]
            cells = "".join(f"{fmt.format(row.medians[name]):>11}" for name, _, fmt in COLUMNS)
            print(f"{label:<22}{row.solved:>7}{row.medians['actions']:>8.0f}{cells}")
        for system in ("react", "actionplan"):
            mine, theirs = table[system, size], table["langgraph", size]
            cells = "".join(
                f"{ratio(mine.medians[name], theirs.medians[name]):>11}"
                if name in RATIOS else f"{'':>11}"
                for name, _, _ in COLUMNS
            )  # fmt: skip
            print(f"{SYSTEMS[system].removeprefix('PowerOn ') + ' / LangGraph':<22}{'':>15}{cells}")
        for system in ("react", "actionplan"):
            kinds = table[system, size].kinds
            print(f"  {SYSTEMS[system]} calls (input tokens) per kind: " + ", ".join(
                f"{kind} {kinds[kind][0]:g} ({kinds[kind][1]:,.0f})"
                for kind in sorted(kinds, key=kind_order)
            ))  # fmt: skip


def kind_order(kind: str) -> tuple[int, str]:
    order = [
        "taskplan", "actionplan", "select", "parameters", "refine", "review", "tool call", "final"
    ]  # fmt: skip
    return (order.index(kind) if kind in order else len(order), kind)


def ratio(mine: float, theirs: float) -> str:
    return f"{mine / theirs:.2f}x" if theirs else "-"


def verdicts(table: dict, sizes: list[int]) -> None:
    """One line per goal: met or not, with the figures (per catalog size) it was judged on."""

    def value(system: str, size: int, name: str, per: str | None = "langgraph") -> float:
        mine = table[system, size].medians[name]
        theirs = table[per, size].medians[name] if per else 1.0
        return mine / theirs if theirs else float("inf")

    def line(
        goal: str,
        limit: Callable[[int], float],
        name: str,
        per: str | None = "langgraph",
        who: tuple[str, ...] = ("react", "actionplan"),
        at: list[int] = sizes,
    ) -> None:
        parts = []
        for system in who:
            figures = [(size, value(system, size, name, per)) for size in at]
            met = all(figure <= limit(size) for size, figure in figures)
            shown = ", ".join(f"{size}: {figure:.2f}" for size, figure in figures)
            parts.append(f"{SYSTEMS[system]} {'MET' if met else 'NOT MET'} ({shown})")
        print(f"- {goal}: " + "; ".join(parts))

    print("\nverdicts (the figures per catalog size)")
    line(
        "cost with caching <= 0.7x LangGraph at 6 tools, <= 0.4x at >= 20",
        lambda size: 0.7 if size < 20 else 0.4,
        "cost",
    )
    if 6 in sizes:
        line(
            "raw o200k input tokens <= 0.55x LangGraph at 6 tools", lambda _: 0.55, "input", at=[6]
        )
    line(
        "React cost <= 1.2x Actionplan cost (ratio)",
        lambda _: 1.2,
        "cost",
        "actionplan",
        who=("react",),
    )
    line("model calls per action <= 2", lambda _: 2.0, "per_action", None)
    line("time to the final answer <= LangGraph's (ratio)", lambda _: 1.0, "seconds")


def report(table: dict, results: list[Run], sizes: list[int], runs: int, scale: float) -> None:
    """The assumptions, a table per catalog size, the actions run and the verdicts."""
    print(
        "PowerOn (engine, demo policy) vs LangGraph create_react_agent: extract notes, write a "
        "report, answer"
    )
    print(
        f"tokens: o200k of tools/response_format JSON + messages; prefix cache per system: "
        f"longest shared prefix with any earlier request, floor to {CACHE_STEP}, from "
        f"{CACHE_MIN:,}; price per token: input {PRICE_INPUT:g}, cached {PRICE_CACHED:g}, "
        f"output {PRICE_OUTPUT:g}; latency {LATENCY_BASE * 1000 * scale:.0f} ms + "
        f"{LATENCY_PER_TOKEN * 1000 * scale:g} ms per output token"
    )
    print(
        "a request = its tools (LangGraph) or response_format (PowerOn) as compact JSON, then "
        "'role: content' per message and 'name arguments' per tool call; each size starts with "
        "an unmeasured warm-up run per system that fills its cache; every run has its own notes"
    )
    print(
        "per solved task: calls = model calls, calls/act = calls per tool action run, input = "
        "o200k input tokens, cached = their share in the cache, output = output tokens, "
        "uncached / cost = cost units without / with the cache, answer s = time to the whole "
        "final answer"
    )
    print_tables(table, sizes, runs)
    print("\nactions run, over every size and run (the same everywhere unless listed apart)")
    for system, label in SYSTEMS.items():
        sequences = Counter(r.methods for r in results if r.system == system)
        print(f"  {label}: " + "; ".join(
            f"{' -> '.join(methods) or '(none)'} x{n}" for methods, n in sequences.items()
        ))  # fmt: skip
    verdicts(table, sizes)


def plot(table: dict, sizes: list[int], scale: float) -> None:
    """The cost and time plots, over catalog size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(exist_ok=True)
    colours = {"react": "tab:blue", "actionplan": "tab:green", "langgraph": "tab:red"}
    figure, (tokens, cost) = plt.subplots(1, 2, figsize=(11, 4.2))
    for system, label in SYSTEMS.items():
        values = [table[system, s].medians for s in sizes]
        colour = colours[system]
        tokens.plot(sizes, [v["input"] for v in values], "o-", color=colour, label=f"{label}, all")
        tokens.plot(
            sizes, [v["input"] * (1 - v["cached_share"]) for v in values], "o--", color=colour,
            label=f"{label}, not cached",
        )  # fmt: skip
        cached, uncached = [v["cost"] for v in values], [v["cost_uncached"] for v in values]
        cost.plot(sizes, cached, "o-", color=colour, label=f"{label}, with cache")
        cost.plot(sizes, uncached, "o--", color=colour, label=f"{label}, no cache")
    tokens.set(title="input tokens per solved task (o200k)", xlabel="tools in the catalog")
    cost.set(
        title=f"cost units per solved task (in {PRICE_INPUT:g}, cached {PRICE_CACHED:g}, "
        f"out {PRICE_OUTPUT:g})",
        xlabel="tools in the catalog",
    )
    for axes in (tokens, cost):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(PLOTS / "vs_react_cost.png", dpi=120)
    figure, (over, breakdown) = plt.subplots(1, 2, figsize=(11, 4.2))
    for system, label in SYSTEMS.items():
        seconds = [table[system, s].medians["seconds"] for s in sizes]
        over.plot(sizes, seconds, "o-", color=colours[system], label=label)
    over.set(title="time to the final answer (median)", xlabel="tools in the catalog", ylabel="s")
    over.set_ylim(bottom=0)
    over.grid(alpha=0.3)
    over.legend(fontsize=8)
    latency_breakdown(breakdown, table, sizes[0], scale)
    figure.tight_layout()
    figure.savefig(PLOTS / "vs_react_time.png", dpi=120)


def latency_breakdown(axes: Any, table: dict, size: int, scale: float) -> None:
    """Where the time to the answer goes, per system: each kind of model call (its calls'
    fixed latency plus its output tokens at the modelled rate), then the host and tools."""
    names = list(SYSTEMS.values())
    left = [0.0] * len(names)
    palette = iter(plt_colours())
    colour_of: dict[str, Any] = {}
    for index, system in enumerate(SYSTEMS):
        row = table[system, size]
        parts = sorted(row.kinds.items(), key=lambda item: kind_order(item[0]))
        for kind, (calls, _, output) in parts:
            seconds = scale * (calls * LATENCY_BASE + output * LATENCY_PER_TOKEN)
            colour = colour_of.setdefault(kind, next(palette))
            axes.barh(index, seconds, left=left[index], color=colour, edgecolor="white")
            if seconds > 0.04 * row.medians["seconds"]:
                axes.text(left[index] + seconds / 2, index, f"{kind}\n{calls:g}×", ha="center",
                          va="center", fontsize=6)  # fmt: skip
            left[index] += seconds
        rest = max(0.0, row.medians["seconds"] - left[index])
        axes.barh(index, rest, left=left[index], color="lightgrey", edgecolor="white")
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.invert_yaxis()
    axes.set(
        title=f"where the time goes at {size} tools (model: {scale * LATENCY_BASE * 1000:.0f} ms "
        f"+ {scale * LATENCY_PER_TOKEN * 1000:.1f} ms/token; grey: host and tools)",
        xlabel="s",
    )
    axes.title.set_fontsize(8)
    axes.grid(alpha=0.3, axis="x")


def plt_colours() -> list[Any]:
    import matplotlib.pyplot as plt

    return list(plt.get_cmap("tab20").colors)
