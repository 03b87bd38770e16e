"""PowerOn's two-stage loop against LangGraph's prebuilt single-stage ReAct agent, side by side.

The same document-report task (extract the uploaded notes, write a report, answer), the same
localhost OpenAI-compatible model server, the same tools, at catalog sizes 6 to 100 (six
built-in actions, then MCP-like tools from bench/catalog_tools.py). For each size and run,
interleaved: PowerOn in React mode, PowerOn in Actionplan mode (both the real engine through
the real `OpenAICompatibleLLM`, the server answering with the demo model's policy, which reads
the engine's own prompts), then `langgraph.prebuilt.create_react_agent` with `ChatOpenAI`,
the server calling the same tools with the same arguments in the order the React run did,
the tools returning the same observations, the final answer the same text.

Every request is recorded at the server and priced afterwards on the corrected yardstick
(bench/yardstick.py): tokens as the provider renders and bills the request (OpenAI's tools as
its TypeScript-like namespace, a response format as its schema ahead of the system message;
Anthropic's as JSON after its tool-use prompt: bench/rendering.py), answers as strict mode
writes them on both sides (every required key, compact: bench/written.py), a provider's cache
per system, catalog size and model, warm (across a size's tasks, after an unmeasured warm-up
task) and cold (per task) (bench/caching.py), price sheets from genai-prices for
gpt-4.1-mini, gpt-5-mini, Claude Haiku 4.5 and Claude Sonnet 4.5 beside the old simple sheet
(bench/sheets.py), per-stage figures with a small model priced for the requests the
product's own routing sends it (Stage 2 and the review), and the earlier yardstick's figures
for continuity.
Every size has its own tasks. Model latency: 400 ms + 15 ms per output token (streamed
answers spread it over their words), times --latency-scale. Time to answer = from the start
to the whole final answer.

    .venv/bin/python bench/vs_react.py [--quick] [--runs N] [--sizes 6,20,50,100]
        [--latency-scale S] [--sheet gpt-4.1-mini] [--small-model NAME]
        [--small-kinds parameters,review]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import yardstick  # noqa: E402
from bench.catalog_tools import catalog, langchain_tools  # noqa: E402
from bench.model_server import Model, Trace, model_id, staged_llm  # noqa: E402
from bench.vs_react_report import PLOTS, SYSTEMS  # noqa: E402
from tests.support import netguard  # noqa: E402
from tests.support.fake_tool_calls import ToolCallServer  # noqa: E402
from tests.support.fake_tools import FakeTool, FakeToolExecutor  # noqa: E402
from workflows.engine.loop.controls import AutoControls  # noqa: E402
from workflows.engine.loop.round import run_round  # noqa: E402
from workflows.engine.model import transport as model_transport  # noqa: E402
from workflows.engine.model.staged import SMALL_KINDS  # noqa: E402
from workflows.engine.prompting.prompts import render_documents, render_observation, system_message  # noqa: E402
from workflows.engine.records.events import ActEvent, MessageEvent, ObserveEvent, RoundEvent  # noqa: E402
from workflows.engine.records.state import RoundState  # noqa: E402
from workflows.engine.testing import MemoryStore  # noqa: E402

# --- The task ------------------------------------------------------------------------------

TOPICS = [
    ("quarterly sales review", "revenue", "the enterprise segment"),
    ("data platform migration", "cutover", "the warehouse jobs"),
    ("customer support retrospective", "backlog", "the onboarding tickets"),
    ("mobile app launch", "crash rate", "the Android release"),
    ("hiring plan", "open roles", "the platform team"),
    ("security audit", "findings", "the payment service"),
    ("pricing experiment", "conversion", "the annual plan"),
    ("office move", "budget", "the Berlin office"),
]
PEOPLE = ["Ana", "Ben", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ines", "Jonas"]


@dataclass(frozen=True)
class Task:
    """One run's request and its uploaded notes."""

    prompt: str
    name: str
    notes: bytes


def task(number: int) -> Task:
    """The request and notes of run `number`: every run its own, the same for each system."""
    rng = random.Random(number)
    topic, metric, area = TOPICS[number % len(TOPICS)]
    people = rng.sample(PEOPLE, 4)
    lines = [
        f"# {topic.capitalize()} — meeting notes",
        "",
        f"Attendees: {', '.join(people)}.",
        "",
        "## Summary",
        f"The {metric} moved by {rng.randint(2, 40)} percent since the last review. "
        f"Most of the change came from {area}. {people[0]} expects the trend to hold for "
        f"another {rng.randint(2, 6)} weeks. The team agreed that the next step is a written plan.",
        "",
        "## Figures",
        *(
            f"- Week {week}: {metric} {rng.randint(100, 999)}, cost {rng.randint(10, 99)}k, "
            f"{rng.randint(1, 30)} incidents"
            for week in range(1, 7)
        ),
        "",
        "## Decisions",
        f"- {people[1]} owns the follow-up on {area} and reports in {rng.randint(1, 3)} weeks.",
        f"- The budget for the {topic} stays at {rng.randint(50, 400)}k for this quarter.",
        f"- Risks are reviewed every {rng.choice(['Monday', 'Wednesday', 'Friday'])}.",
        "",
        "## Open questions",
        f"- Whether {area} needs a second owner ({people[2]} to ask).",
        f"- How the {metric} compares with last year; {people[3]} pulls the numbers.",
    ]
    day = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    prompt = f"Summarise my notes on the {topic} of {day} in a short report."
    return Task(prompt, f"{topic.replace(' ', '_')}_{day}.md", "\n".join(lines).encode())


# --- One run of each system ----------------------------------------------------------------


@dataclass
class Run:
    """One solved (or not) task of one system."""

    system: str
    size: int
    run: int
    seconds: float
    actions: int
    solved: bool
    methods: tuple[str, ...] = ()
    """The actions run, in order."""
    trace: Trace | None = None


def uploaded(work: Task) -> MemoryStore:
    store = MemoryStore()
    store.add(work.name, "text/markdown", work.notes, label="round1_uploads")
    return store


async def poweron(
    mode: str,
    tools: list[FakeTool],
    work: Task,
    run: int,
    server: ToolCallServer,
    model: Model,
    *,
    system: str = "",
    small_kinds: frozenset[str] = SMALL_KINDS,
    schemas: str = "shared",
) -> Run:
    """One round of the real engine, with the product's per-stage routing; the trace of what
    it did (`system`: the name it is reported under, the mode by default; `small_kinds`: the
    call kinds the small model answers)."""
    system = system or mode
    store, trace = uploaded(work), Trace()
    uses_documents = {tool.name for tool in tools if tool.uses_documents}
    # A hosted provider with a prompt cache: the layout the host gives such a provider.
    state = RoundState(mode=mode, round=1, prompt=work.prompt, schemas=schemas)  # type: ignore[arg-type]
    seconds, completed, reported = 0.0, False, False
    methods: dict[int, str] = {}
    async with staged_llm(
        model, system, len(tools), run, small_kinds, base_url=server.url, api_key="sk-bench",
        max_retries=0,
    ) as llm:  # fmt: skip
        started = time.perf_counter()
        executor = FakeToolExecutor(tools=tools)
        async for event in run_round(
            state, llm=llm, tools=executor, store=store, controls=AutoControls()
        ):
            if isinstance(event, ActEvent):
                arguments = dict(event.parameters)
                if event.method in uses_documents:
                    arguments["documentList"] = event.documents
                trace.actions.append((event.method, arguments))
                methods[event.action] = event.method
            elif isinstance(event, ObserveEvent):
                trace.observations.append(render_observation(event.observation))
                report = methods.get(event.action) == "document.generateReport"
                reported |= report and event.observation.success
            elif isinstance(event, MessageEvent) and event.role == "assistant":
                seconds, trace.final = time.perf_counter() - started, event.content
            elif isinstance(event, RoundEvent) and event.status != "started":
                completed = event.status == "completed"
    done = tuple(methods[number] for number in sorted(methods))
    return Run(
        system, len(tools), run, seconds, len(trace.observations), completed and reported, done,
        trace,
    )  # fmt: skip


async def langgraph(
    tools: list[FakeTool],
    work: Task,
    run: int,
    server: ToolCallServer,
    trace: Trace,
    *,
    convert: Any = langchain_tools,
) -> Run:
    """One invocation of LangGraph's prebuilt ReAct agent over the same tools (`convert`
    makes them LangChain tools)."""
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    executed: list[str] = []

    async def respond(name: str, arguments: dict[str, Any]) -> str:
        executed.append(name)
        index = len(executed) - 1
        return trace.observations[index] if index < len(trace.observations) else "{}"

    chat = ChatOpenAI(
        model=model_id("main", "langgraph", len(tools), run), base_url=server.url,
        api_key="sk-bench",
        max_retries=0, temperature=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated in favour of langchain.agents (not installed)
        agent = create_react_agent(
            chat, convert(tools, respond), prompt=system_message()["content"]
        )
    documents = render_documents(uploaded(work).index(), current_round=1)
    request = f"{work.prompt}\n\n## Documents\n{documents}"
    started = time.perf_counter()
    result = await agent.ainvoke({"messages": [("user", request)]}, {"recursion_limit": 25})
    seconds = time.perf_counter() - started
    messages = result["messages"]
    ran = sum(isinstance(message, ToolMessage) for message in messages)
    answered = isinstance(messages[-1], AIMessage) and messages[-1].content == trace.final
    same = executed == [name for name, _ in trace.actions]
    solved = answered and same and bool(ran)
    return Run("langgraph", len(tools), run, seconds, ran, solved, tuple(executed))


def work_for(size: int, run: int) -> Task:
    """The task of one run at one catalog size: every size has its own tasks (run 0: the
    warm-up), so nothing one size's tasks share can be cached for another."""
    return task(size * 1_000 + run)


async def measure(
    sizes: list[int], runs: int, model: Model, engine: dict[str, Any] | None = None
) -> list[Run]:
    """Warm-up, then interleaved runs: React, Actionplan, LangGraph (it replays React's)."""
    results: list[Run] = []
    with ToolCallServer([model] * 1_000_000) as server:
        for size in sizes:
            tools = catalog(size)
            for run in range(runs + 1):  # run 0: the unmeasured warm-up
                work = work_for(size, run)
                react = await poweron("react", tools, work, run, server, model, **(engine or {}))
                plan = await poweron(
                    "actionplan", tools, work, run, server, model, **(engine or {})
                )
                assert react.trace is not None
                model.traces[size, run] = react.trace
                agent = await langgraph(tools, work, run, server, react.trace)
                if run:
                    results.extend([react, plan, agent])
                print(f"  size {size:>3} run {run}: " + ", ".join(
                    f"{SYSTEMS[r.system]} {r.seconds:.1f} s{'' if r.solved else ' UNSOLVED'}"
                    for r in (react, plan, agent)
                ), file=sys.stderr)  # fmt: skip
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 6,20; 1 run; latency x0.1")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="6,20,50,100")
    parser.add_argument("--latency-scale", type=float, default=None, help="1.0; 0.1 with --quick")
    yardstick.options(parser)
    args = parser.parse_args()
    sizes = [6, 20] if args.quick else [int(n) for n in args.sizes.split(",")]
    runs = 1 if args.quick else args.runs
    scale = args.latency_scale if args.latency_scale is not None else (0.1 if args.quick else 1.0)
    model_transport.ALLOW_REMOTE_MODEL_REQUESTS = False
    model = Model(scale)
    started = time.perf_counter()
    with netguard.guarded():
        results = asyncio.run(measure(sizes, runs, model, yardstick.engine_options(args)))
    tables = yardstick.report(model.calls, results, sizes, runs, scale, args)
    for error in model.errors:
        print(f"model server error: {error}")
    if args.quick:  # the README shows the full run's plots: a quick one leaves them be
        print("\nplots: not written by a --quick run")
    else:
        from bench.vs_react_plots import plot

        plot(tables.warm, tables.cold, sizes, tables.pricing)
        print(f"\nplots: {PLOTS / 'vs_react_cost.png'}, {PLOTS / 'vs_react_time.png'}")
    print(f"took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
