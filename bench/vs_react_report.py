"""The report of bench/vs_react.py (and bench/mcp_catalog.py): the tables per catalog size
under one price sheet and cache, tokens and time per call kind, the cost ratios under every
sheet with a warm and a cold cache, the earlier yardstick's beside them, and the verdicts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bench.tally import Pricing, Renders, old_tally, rows, tally

if TYPE_CHECKING:
    from bench.model_server import Call
    from bench.vs_react import Run

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = {"react": "PowerOn React", "actionplan": "PowerOn Actionplan", "langgraph": "LangGraph"}
LATENCY_BASE, LATENCY_PER_TOKEN = 0.4, 0.015
PLOTS = ROOT / "bench" / "plots"
KINDS = {
    "taskplan": "task plan", "select": "Stage 1", "actionplan": "Stage 1 (plan)",
    "parameters": "Stage 2", "refine": "refine", "review": "review", "thought": "thought",
    "tool call": "tool call", "final": "answer",
}  # fmt: skip
"""The engine's call kinds as the report names them, in the order a run makes them."""
COST_GOALS = {
    "actionplan": {6: 1.0, 20: 0.8, 50: 0.6, 100: 0.45},
    "react": {6: 1.4, 20: 1.2, 50: 0.9, 100: 0.7},
}
"""Cost ÷ LangGraph's, gpt-4.1-mini sheet, warm cache (issue 27)."""
STAGE_GOALS = {"actionplan": {6: 0.8}, "react": {20: 1.0}}
"""The same with a small model at its own price for Stage 2 and the review."""
TIME_GOALS, OUTPUT_GOALS = {"react": 1.5, "actionplan": 1.3}, {"react": 210, "actionplan": 195}


def priced(calls: list[Call], results: list[Run], pricing: Pricing, renders: Renders) -> dict:
    """(system, size) -> Row under one pricing."""
    return rows(results, tally(calls, results, pricing, renders))


def old_table(calls: list[Call], results: list[Run]) -> dict:
    """(system, size) -> Row on the earlier yardstick."""
    return rows(results, old_tally(calls, results))


# --- Tables --------------------------------------------------------------------------------

COLUMNS = [
    ("calls", "calls", "{:.0f}"), ("per_action", "calls/act", "{:.2f}"),
    ("input", "input", "{:,.0f}"), ("cached_share", "cached", "{:.0%}"),
    ("output", "output", "{:,.0f}"), ("cost_uncached", "uncached", "{:,.2f}"),
    ("cost", "cost", "{:,.2f}"), ("seconds", "answer s", "{:.2f}"),
]  # fmt: skip
RATIOS = {"calls", "per_action", "input", "output", "cost_uncached", "cost", "seconds"}


def kind_order(kind: str) -> tuple[int, str]:
    order = list(KINDS)
    return (order.index(kind) if kind in order else len(order), kind)


def ratio(mine: float, theirs: float) -> str:
    return f"{mine / theirs:.2f}x" if theirs else "-"


def print_tables(table: dict, sizes: list[int], runs: int, pricing: Pricing) -> None:
    """Per size: each system's medians, PowerOn's ratios to LangGraph, and per call kind."""
    systems = [s for s in SYSTEMS if any((s, size) in table for size in sizes)]
    unit = pricing.main.unit
    print(f"\nunder {pricing.label} (cost in {unit})")
    wide = max(len(SYSTEMS[s].removeprefix("PowerOn ")) + 13 for s in systems)
    head = f"{'':<{wide}}{'solved':>7}{'actions':>8}" + "".join(f"{t:>11}" for _, t, _ in COLUMNS)
    for size in sizes:
        print(f"\n{size} tools (medians of {runs} run(s) per system)")
        print(head)
        for system in systems:
            row = table[system, size]
            cells = "".join(f"{fmt.format(row.medians[name]):>11}" for name, _, fmt in COLUMNS)
            print(f"{SYSTEMS[system]:<{wide}}{row.solved:>7}{row.medians['actions']:>8.0f}{cells}")
        for system in systems:
            if system == "langgraph":
                continue
            mine, theirs = table[system, size], table["langgraph", size]
            cells = "".join(
                f"{ratio(mine.medians[name], theirs.medians[name]):>11}"
                if name in RATIOS else f"{'':>11}"
                for name, _, _ in COLUMNS
            )  # fmt: skip
            label = SYSTEMS[system].removeprefix("PowerOn ") + " / LangGraph"
            print(f"{label:<{wide}}{'':>15}{cells}")
        print("  per call kind: calls, input tokens (cached), output tokens, model seconds")
        for system in systems:
            kinds = table[system, size].kinds
            print(f"  {SYSTEMS[system]}: " + "; ".join(
                f"{KINDS.get(kind, kind)} {k.calls:g}x {k.input:,.0f} ({k.cached:,.0f}) "
                f"{k.output:,.0f} {k.seconds:.2f} s"
                for kind, k in sorted(kinds.items(), key=lambda item: kind_order(item[0]))
            ))  # fmt: skip


def cost_ratio(table: dict, system: str, size: int) -> float:
    theirs = table["langgraph", size].medians["cost"]
    return table[system, size].medians["cost"] / theirs if theirs else float("inf")


def summary(
    tables: dict[str, dict], sizes: list[int], systems: tuple[str, ...] = ("react", "actionplan")
) -> None:
    """Cost ÷ LangGraph's under every pricing, one line each."""
    names = " / ".join(SYSTEMS[s].removeprefix("PowerOn ") for s in systems)
    print(f"\ncost per solved task ÷ LangGraph's ({names}), medians")
    wide, cell = max(map(len, tables)) + 2, 7 * len(systems) + 3
    print(f"{'':<{wide}}" + "".join(f"{f'{size} tools':>{cell}}" for size in sizes))
    for label, table in tables.items():
        cells = "".join(
            f"{' / '.join(f'{cost_ratio(table, s, size):.2f}' for s in systems):>{cell}}"
            for size in sizes
        )
        print(f"{label:<{wide}}{cells}")


def actions(results: list[Run]) -> None:
    print("\nactions run, over every size and run (the same everywhere unless listed apart)")
    for system, label in SYSTEMS.items():
        sequences = Counter(r.methods for r in results if r.system == system)
        if sequences:
            print(f"  {label}: " + "; ".join(
                f"{' -> '.join(methods) or '(none)'} x{n}" for methods, n in sequences.items()
            ))  # fmt: skip


# --- Verdicts ------------------------------------------------------------------------------


def goal_line(
    goal: str,
    figures: Callable[[str, int], float],
    limits: dict[str, dict[int, float]],
    shape: str = "{:.2f}",
) -> None:
    """One goal: per system MET or NOT MET, with the figure per catalog size."""
    parts = []
    for system, limit in limits.items():
        shown = [(size, figures(system, size)) for size in limit]
        if not shown:
            continue
        met = all(value <= limit[size] for size, value in shown)
        text = ", ".join(
            f"{size}: {shape.format(value)} (<= {limit[size]:g})" for size, value in shown
        )
        parts.append(f"{SYSTEMS[system]} {'MET' if met else 'NOT MET'} ({text})")
    print(f"- {goal}: " + "; ".join(parts))


def verdicts(
    main: dict,
    stage: dict | None,
    others: dict[str, dict],
    sizes: list[int],
    labels: tuple[str, str],
) -> None:
    """The goals of issue 27 on the corrected yardstick (set for gpt-4.1-mini with a warm
    cache; `labels`: the main and the per-stage pricing), and the cost goal under the other
    pricings for comparison."""
    main_label, stage_label = labels

    def at(limits: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
        return {s: {n: v for n, v in limit.items() if n in sizes} for s, limit in limits.items()}

    print("\nverdicts (corrected yardstick; the figures per catalog size)")
    goal_line(
        "cost <= Actionplan 1.0/0.8/0.6/0.45x, React 1.4/1.2/0.9/0.7x LangGraph's at "
        f"6/20/50/100 tools ({main_label})",
        lambda s, n: cost_ratio(main, s, n),
        at(COST_GOALS),
    )
    if stage is None:
        print("- per-stage models: not measured (no small model given)")
    else:
        goal_line(
            f"per-stage models ({stage_label}): Actionplan <= 0.8x at 6 tools, React <= 1.0x at 20",
            lambda s, n: cost_ratio(stage, s, n),
            at(STAGE_GOALS),
        )
    goal_line(
        "time to the answer <= React 1.5x, Actionplan 1.3x LangGraph's",
        lambda s, n: main[s, n].medians["seconds"] / main["langgraph", n].medians["seconds"],
        {s: dict.fromkeys(sizes, limit) for s, limit in TIME_GOALS.items()},
    )
    goal_line(
        "output tokens per solved task <= 210 (React), 195 (Actionplan)",
        lambda s, n: main[s, n].medians["output"],
        {s: dict.fromkeys(sizes, float(limit)) for s, limit in OUTPUT_GOALS.items()},
        "{:.0f}",
    )
    for label, table in others.items():
        goal_line(
            f"for comparison, the cost goal under {label}",
            lambda s, n, t=table: cost_ratio(t, s, n),  # type: ignore[misc]
            at(COST_GOALS),
        )


def header(scale: float, pricings: list[Pricing], small_kinds: frozenset[str]) -> None:
    """The yardstick, said once."""
    print(
        "PowerOn (engine, demo policy) vs LangGraph create_react_agent: extract notes, write a "
        "report, answer"
    )
    print(
        "tokens (bench/rendering.py): o200k of each request as its provider renders it: OpenAI "
        "— tools as the TypeScript-like 'namespace functions' (harmony's layout, checked "
        "against the cookbook's estimator below), a response format as harmony's '# Response "
        "Formats' with the schema in compact JSON ahead of the system message, messages framed "
        "as the cookbook counts them; Anthropic — tools and schemas as compact JSON after the "
        "tool-use prompt (346 tokens; 313 assumed for a schema), breakpoint after the system "
        "message. Output (bench/written.py): strict mode's JSON — every required key, schema "
        "order, compact — on both sides where a schema is sent; without one (PowerOn's shared "
        "head: json_object) the compact object the policy wrote, an answer to the user after "
        "it as plain text; a tool call = name + compact arguments + 3"
    )
    print(
        "caches (bench/caching.py): OpenAI automatic prefix from 1,024 in steps of 128; "
        "Anthropic explicit breakpoint, minimum per model, writes 1.25x; one cache per system, "
        "catalog size and model — warm: across the tasks of a size after a warm-up task; cold: "
        "fresh per task. Every task is its own (notes and request differ per size and run)"
    )
    sheets = {s.name: s for p in pricings for s in (p.main, p.small) if s is not None}
    print(
        "sheets (bench/sheets.py, genai-prices' bundled table; prices as ratios to input): "
        + "; ".join(f"{s.name} ({s.shape})" for s in sheets.values())
        + f"; latency {LATENCY_BASE * 1000 * scale:.0f} ms + "
        f"{LATENCY_PER_TOKEN * 1000 * scale:g} ms per output token, whatever the model"
    )
    routed = ", ".join(KINDS.get(k, k) for k in sorted(small_kinds, key=kind_order)) or "none"
    print(
        f"per-stage: the product's routing (StagedLLM) sends these calls to the small model: "
        f"{routed}; each request is priced by the model it named (one sheet for both where no "
        "small model is priced)"
    )
