"""PowerOn against LangGraph's prebuilt single-stage ReAct agent over real MCP tools.

The task, the model server, the corrected yardstick (tokens as billed, strict answers, caches
warm and cold, the price sheets, per-stage prices) and the latency model are
bench/vs_react.py's. The catalog is the six built-in actions plus the tools a real
MCP server lists: the tests' stdio server (`tests/support/mcp_server.py --extra N`, written
with the official SDK) started and listed through the product's own McpHub, so PowerOn sees
them as it does in a run for a hosted provider with a prompt cache (`<server>.<tool>`, the
server's descriptions fenced, catalogs of up to 150 tools listed whole, larger ones cut for the
task with `catalog.search` for the rest) and LangGraph gets each tool's input schema as the
server gave it. Catalogs of 20, 50 and 100 tools; for each size and run, interleaved: PowerOn
React, PowerOn Actionplan, PowerOn React with the catalog cut above 24 tools as a local
model gets it (what the cut saves, or costs, under a prefix cache), LangGraph (replaying
React's actions).

Printed: the tables of vs_react.py, Stage 1's request size per catalog size and its growth
(a verdict: sub-linear), the cost ratios under every sheet, and vs_react.py's verdicts at the
sizes measured.

    .venv/bin/python bench/mcp_catalog.py [--quick] [--runs N] [--sizes 20,50,100]
        [--sheet gpt-4.1-mini] [--small-model NAME] [--small-kinds parameters,review]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import yardstick  # noqa: E402
from bench.catalog_tools import builtin_tools, langchain_tools, openai_name  # noqa: E402
from bench.model_server import Model  # noqa: E402
from bench.rendering import count  # noqa: E402
from bench.vs_react import Run, langgraph, poweron, work_for  # noqa: E402
from bench.vs_react_report import SYSTEMS  # noqa: E402
from tests.support import netguard  # noqa: E402
from tests.support.fake_tool_calls import ToolCallServer  # noqa: E402
from tests.support.mcp_servers import stdio_command  # noqa: E402
from workflows.engine.model import transport as model_transport  # noqa: E402
from workflows.engine.prompting import ranking  # noqa: E402
from workflows.engine.prompting.prompts import system_message  # noqa: E402
from workflows.engine.prompting.ranking import Ranking, task_view  # noqa: E402
from workflows.tools.mcp.servers import McpServer  # noqa: E402
from workflows.tools.mcp.sources import McpHub, forget_listings  # noqa: E402

SERVER_OWN_TOOLS = 6
"""add, city_facts, chart, fail, slow, echo_env: the test server lists them before its extras."""
SYSTEMS["cut"] = "React, catalog cut"
STAGE_ONE = {
    "react": ("taskplan", "select", "refine"),
    "cut": ("taskplan", "select", "refine"),
    "actionplan": ("taskplan", "actionplan"),
}
"""The calls that choose actions, with the catalog in their system message (React's task plan
may carry the first action and refine the next one, so select is not always called)."""


def server(size: int) -> McpServer:
    """The tests' stdio server with as many extra tools as make `size` with the built-ins."""
    extra = size - len(builtin_tools()) - SERVER_OWN_TOOLS
    if extra < 0:
        raise ValueError(f"at least {len(builtin_tools()) + SERVER_OWN_TOOLS} tools")
    return McpServer(name="tools", command=tuple(stdio_command("--extra", str(extra))))


@contextmanager
def cut_catalog() -> Iterator[None]:
    """The engine cuts catalogs above 24 tools even for a provider with a prompt cache, as
    it does for a local model (which gets the whole catalog only up to 24)."""
    kept, ranking.DEFAULT = ranking.DEFAULT, Ranking(cached_threshold=Ranking().threshold)
    try:
        yield
    finally:
        ranking.DEFAULT = kept


async def catalog(size: int, hub: McpHub) -> list[Any]:
    """The built-in actions, then the server's tools as the product lists them."""
    forget_listings()  # each size is a new server with the same name
    tools, unavailable = await hub.catalog()
    if unavailable:
        raise RuntimeError(f"the MCP server did not list its tools: {unavailable}")
    return [*builtin_tools(), *tools]


def as_langchain(
    tools: Sequence[Any], respond: Callable[[str, dict[str, Any]], Awaitable[str]]
) -> list[Any]:
    """LangChain tools: the built-ins from their parameter models, the MCP tools with the
    input schema their server listed (as an MCP adapter hands them to an agent)."""
    from langchain_core.tools import StructuredTool

    own = [tool for tool in tools if not hasattr(tool, "untrusted_summary")]
    converted = langchain_tools(own, respond)
    for tool in tools:
        if hasattr(tool, "untrusted_summary"):

            async def run(_name: str = tool.name, **args: Any) -> str:
                return await respond(_name, args)

            converted.append(
                StructuredTool(
                    name=openai_name(tool.name),
                    description=tool.description,
                    args_schema=tool.Parameters.input_schema,
                    coroutine=run,
                )
            )
    return converted


async def measure(
    sizes: list[int], runs: int, model: Model, engine: dict[str, Any] | None = None
) -> tuple[list[Run], dict]:
    """Warm-up, then interleaved runs per size; also each size's catalog, whole and as a
    task's Stage 1 lists it (system message tokens)."""
    results: list[Run] = []
    catalogs: dict[int, tuple[int, int, int]] = {}
    with ToolCallServer([model] * 1_000_000) as fake:
        for size in sizes:
            async with McpHub([server(size)]) as hub:
                tools = await catalog(size, hub)
                assert len(tools) == size, f"{len(tools)} tools listed, {size} wanted"
                work = work_for(size, 1)
                view = task_view(tools, work.prompt)
                catalogs[size] = (
                    count(system_message(tools)["content"]),
                    count(system_message(view.shown)["content"]),
                    len(view.shown) - (1 if view.hidden else 0),
                )
                for run in range(runs + 1):  # run 0: the unmeasured warm-up
                    work = work_for(size, run)
                    react, plan = [
                        await poweron(mode, tools, work, run, fake, model, **(engine or {}))
                        for mode in ("react", "actionplan")
                    ]
                    with cut_catalog():
                        cut = await poweron(
                            "react", tools, work, run, fake, model, system="cut",
                            **(engine or {}),
                        )  # fmt: skip
                    assert react.trace is not None
                    model.traces[size, run] = react.trace
                    agent = await langgraph(
                        tools, work, run, fake, react.trace, convert=as_langchain
                    )
                    if run:
                        results.extend([react, plan, cut, agent])
                    print(f"  size {size:>3} run {run}: " + ", ".join(
                        f"{SYSTEMS[r.system]} {r.seconds:.1f} s{'' if r.solved else ' UNSOLVED'}"
                        for r in (react, plan, cut, agent)
                    ), file=sys.stderr)  # fmt: skip
    return results, catalogs


def stage_one(table: dict, system: str, size: int) -> float:
    """Input tokens per call that chooses actions (medians per kind, summed, per call)."""
    kinds = table[system, size].kinds
    calls = sum(kinds[kind].calls for kind in STAGE_ONE[system] if kind in kinds)
    tokens = sum(kinds[kind].input for kind in STAGE_ONE[system] if kind in kinds)
    return tokens / calls if calls else float("nan")


def first_request(table: dict, size: int) -> float:
    """LangGraph: median input tokens of one model call (every call carries every schema)."""
    kinds = table["langgraph", size].kinds
    calls = sum(k.calls for k in kinds.values())
    return sum(k.input for k in kinds.values()) / calls if calls else float("nan")


def own_section(catalogs: dict, sizes: list[int]) -> Callable[[dict], None]:
    """This bench's own figures, printed after the main tables: the cut catalog, Stage 1's
    request size and its growth."""

    def show(table: dict) -> None:
        print(
            "\nReact with the catalog cut for the task above 24 tools (as a local model gets it; "
            "a provider with a prompt cache gets catalogs of up to 150 tools whole), against "
            "LangGraph and React"
        )
        for size in sizes:
            cut, react, agent = (table[s, size].medians for s in ("cut", "react", "langgraph"))
            print(
                f"  {size:>3} tools: input {cut['input']:,.0f} ({cut['cached_share']:.0%} "
                f"cached), cost {cut['cost']:,.2f} = {cut['cost'] / agent['cost']:.2f}x "
                f"LangGraph, {cut['cost'] / react['cost']:.2f}x React with the whole catalog; "
                f"uncached cost {cut['cost_uncached'] / react['cost_uncached']:.2f}x React's"
            )
        print(
            "\nStage 1's request: input tokens (as billed) per call that chooses actions with the "
            "catalog (React: task plan, select, refine; Actionplan: task plan, plan), "
            "LangGraph's per call; the catalog's system message whole and as listed for the task"
        )
        for size in sizes:
            whole, listed, shown = catalogs[size]
            print(
                f"  {size:>3} tools: React {stage_one(table, 'react', size):,.0f} (catalog cut "
                f"{stage_one(table, 'cut', size):,.0f}), Actionplan "
                f"{stage_one(table, 'actionplan', size):,.0f}, LangGraph per call "
                f"{first_request(table, size):,.0f}; system message {whole:,} whole, {listed:,} "
                f"when cut for the task ({shown} tools shown)"
            )
        growth(table, sizes)

    return show


def growth(table: dict, sizes: list[int]) -> None:
    """Whether Stage 1's request grows sub-linearly with the catalog."""
    low, high = min(sizes), max(sizes)
    if low == high:
        return
    times = high / low
    parts = []
    for system in ("react", "actionplan", "cut", "langgraph"):
        size_of = stage_one if system != "langgraph" else None
        small = size_of(table, system, low) if size_of else first_request(table, low)
        large = size_of(table, system, high) if size_of else first_request(table, high)
        ratio = large / small
        exponent = math.log(ratio) / math.log(times)
        judged = system != "langgraph"  # LangGraph for comparison
        verdict = (" MET" if exponent < 1 else " NOT MET") if judged else ""
        parts.append(
            f"{SYSTEMS[system]}{verdict} ({low}: {small:,.0f}, {high}: {large:,.0f} tokens; "
            f"{ratio:.2f}x for {times:g}x the tools, exponent {exponent:.2f})"
        )
    print("- Stage 1's request grows sub-linearly with the catalog (exponent < 1): "
          + "; ".join(parts))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 20,100; 1 run; latency x0.1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="20,50,100")
    parser.add_argument("--latency-scale", type=float, default=None, help="1.0; 0.1 with --quick")
    yardstick.options(parser)
    args = parser.parse_args()
    sizes = [20, 100] if args.quick else [int(n) for n in args.sizes.split(",")]
    runs = 1 if args.quick else args.runs
    scale = args.latency_scale if args.latency_scale is not None else (0.1 if args.quick else 1.0)
    model_transport.ALLOW_REMOTE_MODEL_REQUESTS = False
    model = Model(scale)
    started = time.perf_counter()
    engine = yardstick.engine_options(args)
    with netguard.guarded():
        results, catalogs = asyncio.run(measure(sizes, runs, model, engine))
    print(
        "Over a real MCP server's tools (tests/support/mcp_server.py over stdio, listed by "
        "McpHub); everything else as in bench/vs_react.py"
    )
    systems = ("react", "actionplan", "cut")
    yardstick.report(
        model.calls, results, sizes, runs, scale, args, systems, own_section(catalogs, sizes)
    )
    for error in model.errors:
        print(f"model server error: {error}")
    print(f"took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
