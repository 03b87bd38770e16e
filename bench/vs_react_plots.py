"""The plots of bench/vs_react.py's full run, written to bench/plots/ for the README."""

from __future__ import annotations

from typing import Any

from bench.tally import Pricing
from bench.vs_react_report import KINDS, PLOTS, SYSTEMS, kind_order

COLOURS = {"react": "tab:blue", "actionplan": "tab:green", "langgraph": "tab:red"}


def plot(warm: dict, cold: dict, sizes: list[int], pricing: Pricing) -> None:
    """Tokens and cost over the catalog size; time to the answer and where it goes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOTS.mkdir(exist_ok=True)
    figure, (tokens, cost) = plt.subplots(1, 2, figsize=(11, 4.2))
    for system, label in SYSTEMS.items():
        if (system, sizes[0]) not in warm:
            continue
        values = [warm[system, s].medians for s in sizes]
        colour = COLOURS[system]
        tokens.plot(sizes, [v["input"] for v in values], "o-", color=colour, label=f"{label}, all")
        tokens.plot(
            sizes, [v["input"] * (1 - v["cached_share"]) for v in values], "o--", color=colour,
            label=f"{label}, not cached (warm)",
        )  # fmt: skip
        cost.plot(sizes, [v["cost"] for v in values], "o-", color=colour, label=f"{label}, warm")
        cost.plot(
            sizes, [cold[system, s].medians["cost"] for s in sizes], "o:", color=colour,
            label=f"{label}, cold",
        )  # fmt: skip
    tokens.set(title="input tokens per solved task (as billed, o200k)", xlabel="tools")
    cost.set(title=f"cost per solved task, {pricing.main.name} ({pricing.main.unit})")
    cost.set(xlabel="tools in the catalog")
    for axes in (tokens, cost):
        axes.set_ylim(bottom=0)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(PLOTS / "vs_react_cost.png", dpi=120)
    figure, (over, breakdown) = plt.subplots(1, 2, figsize=(11, 4.2))
    for system, label in SYSTEMS.items():
        if (system, sizes[0]) in warm:
            seconds = [warm[system, s].medians["seconds"] for s in sizes]
            over.plot(sizes, seconds, "o-", color=COLOURS[system], label=label)
    over.set(title="time to the final answer (median)", xlabel="tools in the catalog", ylabel="s")
    over.set_ylim(bottom=0)
    over.grid(alpha=0.3)
    over.legend(fontsize=8)
    latency_breakdown(breakdown, warm, sizes[0])
    figure.tight_layout()
    figure.savefig(PLOTS / "vs_react_time.png", dpi=120)


def latency_breakdown(axes: Any, table: dict, size: int) -> None:
    """Where the time to the answer goes, per system: each kind of model call (its modelled
    latency), then the host and tools."""
    import matplotlib.pyplot as plt

    systems = [s for s in SYSTEMS if (s, size) in table]
    palette = iter(plt.get_cmap("tab20").colors)
    colour_of: dict[str, Any] = {}
    for index, system in enumerate(systems):
        row, left = table[system, size], 0.0
        for kind, part in sorted(row.kinds.items(), key=lambda item: kind_order(item[0])):
            colour = colour_of.setdefault(kind, next(palette))
            axes.barh(index, part.seconds, left=left, color=colour, edgecolor="white")
            if part.seconds > 0.04 * row.medians["seconds"]:
                axes.text(left + part.seconds / 2, index, f"{KINDS.get(kind, kind)}\n"
                          f"{part.calls:g}×", ha="center", va="center", fontsize=6)  # fmt: skip
            left += part.seconds
        rest = max(0.0, row.medians["seconds"] - left)
        axes.barh(index, rest, left=left, color="lightgrey", edgecolor="white")
    axes.set_yticks(range(len(systems)), [SYSTEMS[s] for s in systems], fontsize=8)
    axes.invert_yaxis()
    axes.set(title=f"where the time goes at {size} tools (grey: host and tools)", xlabel="s")
    axes.title.set_fontsize(8)
    axes.grid(alpha=0.3, axis="x")
