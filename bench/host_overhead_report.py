"""How `host_overhead.py` reports: medians and p90s per system and size, where a runner's
iteration goes, and one verdict line per goal; never asserts."""

from __future__ import annotations

import statistics
from typing import Any

from bench.stats import quantile

SYSTEMS = {
    "bare": "PowerOn engine, bare",
    "bare_stable": "PowerOn engine, bare, stable",
    "sqlite": "PowerOn runner, SQLite",
    "postgres": "PowerOn runner, PostgreSQL",
    "lg_bare": "LangGraph agent, no checkpointer",
    "lg_sqlite": "LangGraph + SqliteSaver",
    "lg_async": "LangGraph + AsyncSqliteSaver",
}


def per_iteration(results: list[dict[str, Any]], size: int) -> list[float]:
    return [result["seconds"] * 1000 / size for result in results]


def report(sizes: list[int], runs: int, results: dict[tuple[str, int], list[dict]]) -> None:
    systems = [name for name in SYSTEMS if (name, sizes[0]) in results]
    print(
        f"host overhead per loop iteration: a React task of N actions, zero model latency, "
        f"{runs} runs of each system and size, interleaved (ms per iteration = round / N)"
    )
    print()
    header = f"{'system':<34}" + "".join(f"{f'N={n} med':>11}{'p90':>8}" for n in sizes)
    print(header + f"{'100 vs 10':>11}" * (10 in sizes and 100 in sizes))
    medians: dict[tuple[str, int], float] = {}
    for name in systems:
        line = f"{SYSTEMS[name]:<34}"
        for size in sizes:
            values = per_iteration(results[(name, size)], size)
            medians[(name, size)] = statistics.median(values)
            line += f"{medians[(name, size)]:>11.2f}{quantile(values, 0.9):>8.2f}"
        if 10 in sizes and 100 in sizes:
            line += f"{medians[(name, 100)] * 100 / (medians[(name, 10)] * 10):>10.2f}×"
        print(line)
    print()
    checkpoints: dict[int, tuple[float, float]] = {}
    for size in sizes:
        checkpoints.update(breakdown(size, results, medians))
    verdicts(sizes, medians, checkpoints)


def breakdown(
    size: int, results: dict[tuple[str, int], list[dict]], medians: dict
) -> dict[int, tuple[float, float]]:
    """Where a runner's iteration goes: storing, DBOS checkpoints, the rest. Returns, for the
    runner on SQLite, {size: (DBOS operations per iteration, ms each)}."""
    found: dict[int, tuple[float, float]] = {}
    for name in ("sqlite", "postgres"):
        if (name, size) not in results:
            continue
        rows = results[(name, size)]

        def med(key: str, rows: list[dict] = rows) -> float:
            return statistics.median(row[key] for row in rows)

        stored, batches = med("stored") / size, med("batches") / size
        steps, recv = med("steps") / size, med("recv") / size
        store_ms = med("store") * 1000 / size
        dbos_ms = (med("dbos") - med("inside")) * 1000 / size
        per_op = dbos_ms / (steps + recv)
        if name == "sqlite":
            found[size] = (steps + recv, per_op)
        bare = medians[("bare", size)]
        rest = medians[(name, size)] - bare - store_ms - dbos_ms
        print(
            f"N={size} {SYSTEMS[name]}: {stored:.1f} events stored per iteration in "
            f"{batches:.1f} transactions, {store_ms:.2f} ms; {steps:.1f} DBOS steps + "
            f"{recv:.1f} recv per iteration, {dbos_ms:.2f} ms of checkpoints ({per_op:.2f} ms "
            f"each); engine {bare:.2f} ms; the rest (documents, broadcast, setup) {rest:.2f} ms"
        )
    print()
    return found


def verdicts(
    sizes: list[int],
    medians: dict[tuple[str, int], float],
    checkpoints: dict[int, tuple[float, float]],
) -> None:
    for size in sizes:
        saver = min(medians[("lg_sqlite", size)], medians[("lg_async", size)])
        ratio = medians[("sqlite", size)] / saver
        verdict(
            ratio <= 0.5,
            f"N={size}: runner on SQLite (events + checkpoints) is {ratio:.2f}× LangGraph with "
            f"its SQLite checkpointer (the faster of the two savers; goal ≤ 0.5×)",
        )
        if size in checkpoints:
            operations, each = checkpoints[size]
            budget = 0.5 * saver
            print(
                f"        the floor: the goal leaves {budget:.2f} ms per iteration for everything; "
                f"its DBOS checkpoints alone take {operations * each:.2f} ms ({operations:.1f} "
                f"operations at {each:.2f} ms), and one operation alone takes "
                f"{each / budget:.1f}× that budget: "
                + ("out of reach while each model call and tool is a durable step"
                   if each > budget else "within reach")
            )  # fmt: skip
        for name, schemas in (("bare", "narrow"), ("bare_stable", "stable")):
            ratio = medians[(name, size)] / medians[("lg_bare", size)]
            verdict(
                ratio <= 1.0,
                f"N={size}: bare engine ({schemas} schemas) is {ratio:.2f}× LangGraph without "
                "checkpointer (goal ≤ 1×)",
            )
    if 10 in sizes and 100 in sizes:
        for name in ("bare", "bare_stable", "sqlite", "postgres"):
            if (name, 100) in medians:
                ratio = medians[(name, 100)] * 100 / (medians[(name, 10)] * 10)
                verdict(
                    ratio <= 10,
                    f"{SYSTEMS[name]}: 100 iterations cost {ratio:.2f}× 10 iterations (goal ≤ 10×)",
                )


def verdict(met: bool, text: str) -> None:
    print(f"{'MET    ' if met else 'MISSED '} {text}")
