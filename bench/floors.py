"""What no design can go below on the benches' task: the floors of cost and time per solved
task, priced and timed as `vs_react.py` prices and times a run.

- **Any agent** must read, at least once and at full price, what is new in its run (the
  request with its documents index, and the observation of each action: nothing earlier can
  have cached it), and must write at least what LangGraph writes (each action's name and
  arguments, and the answer). Its instructions and its catalog are taken as free.
- **The seeds' protocol** reads the same, and writes PowerOn's own recorded answers with
  every free-text field left out (objectives, success criteria, contexts, reasons,
  learnings, descriptions): what is left is the JSON the protocol asks for (its keys, the
  actions, references, parameter values, decisions) and the answer, in the calls the run
  made. That is below any valid answer (a task needs an objective), so a floor.

A goal below a floor cannot be met by tuning prompts, caching or the host: the figures say
which goals are out of reach for every agent, and which for the seeds' protocol.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench.vs_react_report import (
    LATENCY_BASE,
    LATENCY_PER_TOKEN,
    PRICE_INPUT,
    PRICE_OUTPUT,
    SYSTEMS,
    count,
)

if TYPE_CHECKING:
    from bench.vs_react import Call, Run

PROSE = frozenset(
    {
        "overview", "objective", "successCriteria", "actionObjective", "parametersContext",
        "reason", "learnings", "description", "improvements", "metCriteria",
    }
)  # fmt: skip
"""The free-text fields of the protocol's answers (the answer itself is not among them)."""


def blanked(value: Any) -> Any:
    """A structured answer with its free-text fields left out (lower than any valid answer:
    a task needs an objective)."""
    if isinstance(value, dict):
        return {key: blanked(item) for key, item in value.items() if key not in PROSE}
    if isinstance(value, list):
        return [blanked(item) for item in value]
    return value


def least_output(call: Call) -> int:
    """The output tokens of a call's answer without its free text (a streamed or plain
    text answer, and LangGraph's tool calls, stay whole)."""
    if call.system == "langgraph" or not call.structured:
        return call.output_tokens
    return count(json.dumps(blanked(json.loads(call.content)), ensure_ascii=False))


def new_content(calls: list[Call]) -> int:
    """The tokens of what is new in a run, read once: the request and every observation, as
    the last request of LangGraph's conversation holds them."""
    last = max(calls, key=lambda call: len(call.body["messages"]))
    return sum(
        count(str(message.get("content") or ""))
        for message in last.body["messages"]
        if message["role"] in ("user", "tool")
    )


@dataclass(frozen=True)
class Floor:
    """One run's floor: its cost units and modelled seconds to the answer."""

    cost: float
    seconds: float


def floors(calls: list[Call], results: list[Run]) -> dict[tuple[str, int], Floor]:
    """(system, size) -> the median floor over the solved runs: "any agent" for LangGraph's
    runs, the seeds' protocol for PowerOn's."""
    by_run: dict[tuple[str, int, int], list[Call]] = {}
    for call in calls:
        by_run.setdefault((call.system, call.size, call.run), []).append(call)
    found: dict[tuple[str, int], list[Floor]] = {}
    for run in results:
        mine, agents = (
            by_run.get((run.system, run.size, run.run)),
            by_run.get(("langgraph", run.size, run.run)),
        )
        if not (run.solved and mine and agents):
            continue
        read = new_content(agents) * PRICE_INPUT
        written = sum(least_output(call) for call in mine)
        seconds = len(mine) * LATENCY_BASE + written * LATENCY_PER_TOKEN
        found.setdefault((run.system, run.size), []).append(
            Floor(read + written * PRICE_OUTPUT, seconds)
        )
    return {
        key: Floor(
            statistics.median(f.cost for f in values), statistics.median(f.seconds for f in values)
        )
        for key, values in found.items()
    }


def modelled_seconds(calls: list[Call], system: str, size: int) -> float:
    """The median modelled time of a system's solved runs: its calls' latency and output."""
    runs: dict[int, list[Call]] = {}
    for call in calls:
        if call.system == system and call.size == size and call.run:
            runs.setdefault(call.run, []).append(call)
    return statistics.median(
        len(mine) * LATENCY_BASE + sum(c.output_tokens for c in mine) * LATENCY_PER_TOKEN
        for mine in runs.values()
    )


def report(
    calls: list[Call],
    results: list[Run],
    table: dict,
    sizes: list[int],
    systems: tuple[str, ...] = ("react", "actionplan"),
    names: dict[str, str] = SYSTEMS,
) -> None:
    """The floors per size beside LangGraph's measured cost, and what they say of the goals."""
    found = floors(calls, results)
    print(
        "\nfloors per solved task (bench/floors.py): any agent reads what is new in the run "
        "once at full price (the request, its documents index, each observation) and writes "
        "LangGraph's output (the actions and the answer); the seeds' protocol reads the same "
        "and writes PowerOn's answers with every free-text field left out; cost units, and time "
        "modelled as calls x base latency + output tokens x rate, each / LangGraph's"
    )
    times: dict[tuple[str, int], float] = {}
    for size in sizes:
        agent = table["langgraph", size].medians["cost"]
        anyone = found.get(("langgraph", size))
        if anyone is None:
            continue
        theirs = modelled_seconds(calls, "langgraph", size)
        parts = [f"any agent {anyone.cost:,.0f} = {anyone.cost / agent:.2f}x"]
        for system in systems:
            floor = found.get((system, size))
            if floor is not None:
                times[system, size] = floor.seconds / theirs
                parts.append(
                    f"{names[system]} under the protocol {floor.cost:,.0f} = "
                    f"{floor.cost / agent:.2f}x, time {times[system, size]:.2f}x"
                )
        print(f"  {size:>3} tools (LangGraph {agent:,.0f} units): " + "; ".join(parts))
    below(found, times, table, sizes, systems, names)


def below(
    found: dict[tuple[str, int], Floor],
    times: dict[tuple[str, int], float],
    table: dict,
    sizes: list[int],
    systems: tuple[str, ...],
    names: dict[str, str],
) -> None:
    """One line per goal that a floor puts out of reach (cost <= 0.7x LangGraph at 6 tools and
    <= 0.4x from 20; time to the answer <= LangGraph's)."""

    def share(system: str, size: int) -> float:
        return found[system, size].cost / table["langgraph", size].medians["cost"]

    def limit(size: int) -> float:
        return 0.7 if size < 20 else 0.4

    def listed(system: str, out: list[int]) -> str:
        return ", ".join(f"{limit(s):g}x at {s} tools (floor {share(system, s):.2f}x)" for s in out)

    known = [size for size in sizes if ("langgraph", size) in found]
    out = [size for size in known if share("langgraph", size) > limit(size)]
    if out:
        print(f"  out of reach for any agent: cost <= {listed('langgraph', out)}")
    for system in systems:
        out = [s for s in known if (system, s) in found and share(system, s) > limit(s)]
        if out:
            print(f"  out of reach under the seeds' protocol, {names[system]}: cost <= "
                  + listed(system, out))  # fmt: skip
        slow = [s for s in known if times.get((system, s), 0.0) > 1.0]
        if slow:
            print(
                f"  out of reach under the seeds' protocol, {names[system]}: time <= LangGraph's "
                "(floor " + ", ".join(f"{times[system, s]:.2f}x at {s}" for s in slow) + ")"
            )
