"""The corrected yardstick of bench/vs_react.py and bench/mcp_catalog.py: the options that
choose the sheets, the check of the tool rendering against the cookbook's estimator, and the
whole report (tables, the ratios under every sheet, warm and cold, the earlier yardstick's,
the verdicts and the floors)."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bench import floors
from bench.rendering import (
    compact,
    cookbook_tool_tokens,
    count,
    functions_namespace,
    openai_request,
    response_format_text,
)
from bench.sheets import MAIN_SHEETS, Sheet, sheet
from bench.tally import SMALL, Pricing, Renders
from bench.vs_react_report import (
    KINDS,
    SYSTEMS,
    actions,
    header,
    kind_order,
    old_table,
    priced,
    print_tables,
    summary,
    verdicts,
)
from workflows.engine.model.staged import SMALL_KINDS

if TYPE_CHECKING:
    from bench.model_server import Call
    from bench.vs_react import Run

SMALL_FOR = {
    "gpt-4.1-mini": "gpt-4.1-nano", "gpt-5-mini": "gpt-5-nano",
    "claude-sonnet-4-5": "claude-haiku-4-5",
}  # fmt: skip
"""The small model priced beside each main model for per-stage figures."""
TOLERANCE = 0.15
"""How far the rendering may be from the cookbook's estimator (both without defaults): the
estimator's fixed 3 tokens a property assume a `// description` line, so it counts more for
schemas whose properties have none (an MCP server's, often)."""
COOKBOOK_EXAMPLE = {
    "tools": [{"type": "function", "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {"type": "object", "required": ["location"], "properties": {
            "location": {"type": "string",
                         "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "description": "The unit of temperature to return",
                     "enum": ["celsius", "fahrenheit"]},
        }},
    }}],
    "messages": [
        {"role": "system",
         "content": "You are a helpful assistant that can answer to questions about the weather."},
        {"role": "user", "content": "What's the weather like in San Francisco?"},
    ],
}  # fmt: skip
"""The cookbook's tool example; the API counted 101 prompt tokens for gpt-4o and gpt-4o-mini."""


def options(parser: argparse.ArgumentParser) -> None:
    """The yardstick's options."""
    parser.add_argument(
        "--sheet", default="gpt-4.1-mini", help="the main table's and the verdicts' sheet"
    )
    parser.add_argument(
        "--small-model", default=None,
        help="the sheet for requests naming the small model (default: the main sheet's "
        "smaller sibling, gpt-4.1-nano for gpt-4.1-mini)",
    )  # fmt: skip
    parser.add_argument(
        "--schemas", default="shared", choices=("shared", "stable"),
        help="PowerOn's layout for a hosted provider: shared (one prompt head for every kind of "
        "call, no schema, compact answers, the answer after the JSON: the product's default) "
        "or stable (a strict schema per kind of call, the earlier default)",
    )  # fmt: skip
    parser.add_argument(
        "--small-kinds", default=",".join(sorted(SMALL_KINDS)),
        help="call kinds the product's per-stage routing (StagedLLM) sends to the small model "
        "(default: the product's own, Stage 2 and the review)",
    )  # fmt: skip


def small_kinds(args: argparse.Namespace) -> frozenset[str]:
    return frozenset(kind for kind in args.small_kinds.split(",") if kind)


def engine_options(args: argparse.Namespace) -> dict[str, Any]:
    """How the engine runs for a hosted provider: its layout and its per-stage routing."""
    return {"small_kinds": small_kinds(args), "schemas": args.schemas}


@dataclass
class Tables:
    """The main sheet's tables, with a warm and a cold cache."""

    pricing: Pricing
    warm: dict
    cold: dict


def rendering_check(calls: list[Call], sizes: list[int]) -> None:
    """LangGraph's tools as rendered against the cookbook's estimator and as compact JSON, and
    PowerOn's response formats as rendered, per size."""
    example = openai_request(COOKBOOK_EXAMPLE)
    messages = COOKBOOK_EXAMPLE["messages"]
    estimated = (
        cookbook_tool_tokens(COOKBOOK_EXAMPLE["tools"])
        + 3
        + sum(3 + count(message["role"]) + count(message["content"]) for message in messages)
    )
    print(
        f"\nrendering check (bench/rendering.py): the cookbook's example request counts "
        f"{len(example.tokens)} tokens rendered, the API counted 101 (estimator {estimated})"
    )
    for size in sizes:
        agent = next((c for c in calls if c.system == "langgraph" and c.size == size), None)
        if agent is None:
            continue
        tools = agent.body["tools"]
        rendered = count(functions_namespace(tools))
        bare = count(functions_namespace(tools, defaults=False))
        estimate, as_json = cookbook_tool_tokens(tools), count(compact(tools))
        off = bare / estimate - 1
        schemas = [tool["function"].get("parameters") or {} for tool in tools]
        properties = [spec for schema in schemas for spec in schema.get("properties", {}).values()]
        bare_share = sum(not spec.get("description") for spec in properties) / len(properties)
        print(
            f"  {size:>3} tools, LangGraph: rendered {rendered:,} tokens ({bare:,} without the "
            f"'// default:' comments the estimator leaves out; estimator {estimate:,}, "
            f"{off:+.0%}, {'within' if abs(off) <= TOLERANCE else 'OUTSIDE'} ±{TOLERANCE:.0%}; "
            f"{bare_share:.0%} of the properties have no description); compact JSON "
            f"{as_json:,} (rendered = {rendered / as_json:.2f}x the JSON)"
        )
        formats: dict[str, tuple[int, int]] = {}
        for call in calls:
            shape = call.body.get("response_format")
            schema = shape and shape.get("type") == "json_schema"  # json_object: none billed
            if call.size == size and call.system != "langgraph" and schema:
                rendered_format = count(response_format_text(shape))
                formats.setdefault(call.kind, (rendered_format, count(compact(shape))))
        print(
            "       PowerOn response formats, rendered (as JSON in the request): "
            + (
                ", ".join(
                    f"{KINDS.get(kind, kind)} {a:,} ({b:,})"
                    for kind, (a, b) in sorted(
                        formats.items(), key=lambda item: kind_order(item[0])
                    )
                )
                or "none (no call sent a schema)"
            )
        )


def pricings(args: argparse.Namespace) -> tuple[Pricing, list[Pricing]]:
    """The main pricing, and every pricing the summary shows."""
    main = sheet(args.sheet)
    small_name = args.small_model or SMALL_FOR.get(main.name)
    # the simple sheet's units are not dollars: no real model prices beside it
    small: Sheet | None = sheet(small_name) if small_name and main.name != "simple" else None
    shown: list[Pricing] = []
    for name in dict.fromkeys([main.name, *MAIN_SHEETS]):
        for cache in ("warm", "cold"):
            shown.append(Pricing(sheet(name), cache=cache))
    pairs = {main.name: small, **{m: sheet(s) for m, s in SMALL_FOR.items() if m != main.name}}
    for name, partner in pairs.items():
        if partner is not None:
            for cache in ("warm", "cold"):
                shown.append(Pricing(sheet(name), partner, cache))
    return Pricing(main), shown


def report(
    calls: list[Call],
    results: list[Run],
    sizes: list[int],
    runs: int,
    scale: float,
    args: argparse.Namespace,
    systems: tuple[str, ...] = ("react", "actionplan"),
    between: Any = None,
) -> Tables:
    """Everything the benches print on the corrected yardstick (`between`: a callable
    printing a bench's own section after the main tables)."""
    main, shown = pricings(args)
    header(scale, shown, small_kinds(args))
    renders = Renders()
    tables = {p.label: priced(calls, results, p, renders) for p in shown}
    warm, cold = tables[main.label], tables[Pricing(main.main, cache="cold").label]
    rendering_check(calls, sizes)
    print_tables(warm, sizes, runs, main)
    if between is not None:
        between(warm)
    tables["earlier yardstick (JSON tools, policy's keys, one cache, simple)"] = old_table(
        calls, results
    )
    summary(tables, sizes, systems)
    named = Counter((call.system, call.model) for call in calls if call.system != "langgraph")
    print(
        "requests per model named: "
        + ", ".join(f"{SYSTEMS[s]} {m} {n}" for (s, m), n in sorted(named.items()))
    )
    stage = next((p for p in shown if p.small and p.main == main.main and p.cache == "warm"), None)
    if stage is not None and not any(call.model == SMALL for call in calls):
        print("  no request named the small model: per-stage figures equal one model's")
    actions(results)
    others = {p.label: tables[p.label] for p in shown if p.label != main.label and not p.small}
    stage_table = tables[stage.label] if stage else None
    verdicts(warm, stage_table, others, sizes, (main.label, stage.label if stage else ""))
    by_sheet = {p.main: tables[p.label] for p in shown if p.cache == "warm" and not p.small}
    floors.report(calls, results, by_sheet, sizes, systems)
    return Tables(main, warm, cold)
