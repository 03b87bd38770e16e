"""What no design can go below on the benches' task: the floors of cost and time per solved
task, priced under each sheet and timed as `vs_react.py` times a call.

- **Any agent** must read, at least once and at full price, what is new in its run (the
  request with its documents index, and the observation of each action: nothing earlier can
  have cached it), and must write at least what LangGraph writes (each action's name and
  compact arguments, and the answer). Its instructions and its catalog are taken as free.
- **The seeds' protocol** reads the same, and writes PowerOn's own recorded answers in the
  most compact encoding the protocol allows: every free-text field left out (overview,
  objectives, success criteria, contexts, reasons, learnings, descriptions), keys whose value
  is empty (null, "", [], {}) left out, every key of the protocol one letter (an action's
  parameters keep the tool's names), no spaces; and no Stage 2 call
  for an action whose parameters are all optional (the recorded parameters schema says so).
  What is left is the JSON the protocol needs (the actions, references, parameter values,
  decisions) and the answer, in the calls the run made but those. That is below any valid
  answer (a task needs an objective), so a floor.

A goal below a floor cannot be met by tuning prompts, caching or the host.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from string import ascii_letters
from typing import TYPE_CHECKING, Any

from bench.rendering import compact, count, resolve
from bench.sheets import Sheet
from bench.vs_react_report import COST_GOALS, LATENCY_BASE, LATENCY_PER_TOKEN, SYSTEMS, TIME_GOALS
from workflows.engine.model.formats import ANSWER_KEY, split_answer

if TYPE_CHECKING:
    from bench.model_server import Call
    from bench.vs_react import Run

PROSE = frozenset(
    {
        "overview", "objective", "successCriteria", "actionObjective", "parametersContext",
        "reason", "learnings", "description", "improvements", "metCriteria",
    }
)  # fmt: skip
"""The free-text fields of the protocol's answers (the answer itself is not among them)."""


def least(value: Any) -> Any:
    """A structured answer in the protocol's least encoding: no free text, no empty values,
    one-letter keys (an action's parameters keep their names: they are the tool's, as in
    LangGraph's calls)."""
    if isinstance(value, dict):
        kept = {k: v if k == "parameters" else least(v) for k, v in value.items()}
        kept = {k: v for k, v in kept.items() if k not in PROSE and v not in (None, "", [], {})}
        return {ascii_letters[i]: v for i, v in enumerate(kept.values())}
    if isinstance(value, list):
        return [least(item) for item in value]
    return value


def all_optional(call: Call) -> bool:
    """A Stage 2 call whose action's parameters are all optional (nullable in the schema)."""
    if call.kind != "parameters":
        return False
    schema = ((call.body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if not schema:
        return False
    parameters = resolve(schema.get("properties", {}).get("parameters", {}), schema)
    fields = [resolve(spec, schema) for spec in parameters.get("properties", {}).values()]
    return all(
        any(resolve(v, schema).get("type") == "null" for v in spec.get("anyOf", []))
        for spec in fields
    )


def least_output(call: Call) -> int:
    """The output tokens of a call's answer in the least encoding (a streamed or plain text
    answer, and LangGraph's tool calls, stay whole; an answer to the user written with a
    decision counts as plain text after its JSON, as the product can write it)."""
    if call.system == "langgraph" or not call.structured:
        return call.output_tokens
    value = split_answer(call.content)
    answer = value.pop(ANSWER_KEY, None)
    tokens = count(compact(least(value)))
    return tokens + (1 + count(answer) if answer else 0)


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
    """One run's floor: tokens read at full price, tokens written, calls made."""

    read: int
    written: int
    calls: int

    def cost(self, sheet: Sheet) -> float:
        return sheet.scale * (self.read * sheet.input + self.written * sheet.output)

    @property
    def seconds(self) -> float:
        return self.calls * LATENCY_BASE + self.written * LATENCY_PER_TOKEN


def floors(calls: list[Call], results: list[Run]) -> dict[tuple[str, int], list[Floor]]:
    """(system, size) -> the floors of its solved runs: "any agent" for LangGraph's runs, the
    seeds' protocol for PowerOn's."""
    by_run: dict[tuple[str, int, int], list[Call]] = {}
    for call in calls:
        by_run.setdefault((call.system, call.size, call.run), []).append(call)
    found: dict[tuple[str, int], list[Floor]] = {}
    for run in results:
        mine = by_run.get((run.system, run.size, run.run))
        agents = by_run.get(("langgraph", run.size, run.run))
        if not (run.solved and mine and agents):
            continue
        made = [call for call in mine if not all_optional(call)]
        written = sum(least_output(call) for call in made)
        floor = Floor(new_content(agents), written, len(made))
        found.setdefault((run.system, run.size), []).append(floor)
    return found


def modelled(table: dict, system: str, size: int) -> float:
    """A system's modelled model time (its calls' latency and output; medians per kind)."""
    kinds = table[system, size].kinds.values()
    return sum(kind.calls * LATENCY_BASE + kind.output * LATENCY_PER_TOKEN for kind in kinds)


def report(
    calls: list[Call],
    results: list[Run],
    tables: dict[Sheet, dict],
    sizes: list[int],
    systems: tuple[str, ...] = ("react", "actionplan"),
) -> None:
    """The floors per size and sheet against LangGraph's cost with a warm cache, the time
    floors against LangGraph's modelled time, and the goals they put out of reach."""
    found = floors(calls, results)
    known = [n for n in sizes if ("langgraph", n) in found]
    if not known:
        return
    names = ["any agent", *(SYSTEMS[s].removeprefix("PowerOn ") for s in systems)]
    print(
        "\nfloors per solved task (bench/floors.py): any agent reads what is new in the run "
        "once at full price and writes LangGraph's output; the seeds' protocol reads the same "
        "and writes PowerOn's answers in the least encoding (no free text, no empty values, "
        "one-letter keys, compact) with no Stage 2 call for an all-optional action. Each ÷ "
        f"LangGraph's cost with a warm cache ({' / '.join(names)})"
    )
    cell = 7 * (len(systems) + 1) + 3
    print(f"{'':<20}" + "".join(f"{f'{n} tools':>{cell}}" for n in known))

    def share(sheet: Sheet, table: dict, system: str, size: int) -> float:
        cost = statistics.median(f.cost(sheet) for f in found[system, size])
        return float(cost / table["langgraph", size].medians["cost"])

    for sheet, table in tables.items():
        cells = []
        for size in known:
            shown = [share(sheet, table, s, size) for s in ("langgraph", *systems)
                     if (s, size) in found]  # fmt: skip
            cells.append(" / ".join(f"{value:.2f}" for value in shown))
        print(f"{sheet.name:<20}" + "".join(f"{shown:>{cell}}" for shown in cells))
    table = next(iter(tables.values()))
    times = {
        (s, n): statistics.median(f.seconds for f in found[s, n]) / modelled(table, "langgraph", n)
        for s in systems
        for n in known
        if (s, n) in found
    }
    print(
        "time floor (calls x 0.4 s + least output x 15 ms) ÷ LangGraph's modelled time: "
        + "; ".join(
            f"{SYSTEMS[s]} " + ", ".join(f"{times[s, n]:.2f}x at {n}" for n in known)
            for s in systems
        )
    )
    sheet = next(iter(tables))
    out = [n for n in known if n in COST_GOALS["react"] and share(sheet, table, "langgraph", n)
           > min(COST_GOALS[s][n] for s in COST_GOALS)]  # fmt: skip
    for size in out:
        print(f"  out of reach for any agent at {size} tools ({sheet.name}): floor "
              f"{share(sheet, table, 'langgraph', size):.2f}x")  # fmt: skip
    for system in systems:
        goals = COST_GOALS.get(system, {})
        over = [n for n in known if n in goals and (system, n) in found
                and share(sheet, table, system, n) > goals[n]]  # fmt: skip
        if over:
            print(f"  out of reach under the seeds' protocol, {SYSTEMS[system]}, {sheet.name}: "
                  + ", ".join(f"<= {goals[n]:g}x at {n} tools (floor "
                              f"{share(sheet, table, system, n):.2f}x)" for n in over))  # fmt: skip
        limit = TIME_GOALS.get(system)
        slow = [n for n in known if limit and times.get((system, n), 0.0) > limit]
        if slow:
            print(f"  out of reach under the seeds' protocol, {SYSTEMS[system]}: time <= "
                  f"{limit:g}x (floor " + ", ".join(f"{times[system, n]:.2f}x at {n}"
                                                    for n in slow) + ")")  # fmt: skip
