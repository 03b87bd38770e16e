"""Prompt tokens per call kind for a three-action scripted React task (refine carries the
next action, so Stage 1 is asked once; no review when the criteria are met).

Runs whole rounds through the real openai client against the localhost fake model server
and reads the recorded request bodies (tokens = characters // 4, as the fake server counts).
Prints the median over a few runs, per call (and per kind for the whole task).

    .venv/bin/python bench/engine_tokens.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402
from tests.support.fake_tools import FakeToolExecutor  # noqa: E402
from workflows.engine.loop.controls import AutoControls  # noqa: E402
from workflows.engine.loop.round import run_round  # noqa: E402
from workflows.engine.model.llm import OpenAICompatibleLLM  # noqa: E402
from workflows.engine.records.state import HistoryEntry, RoundState  # noqa: E402
from workflows.engine.testing import MemoryStore  # noqa: E402

KINDS = {
    "TaskPlan": "task plan",
    "ActionSelection": "Stage 1 (select)",
    "ActionParameters": "Stage 2 (parameters)",
    "RefinementDecision": "refine",
    "TaskReview": "review",
}


def script() -> list:
    def select(action: str, fields: list[str], docs: list[str]) -> dict:
        return {
            "action": action,
            "actionObjective": f"Use {action} for the market overview",
            "learnings": [],
            "requiredInputDocuments": docs,
            "requiredConnection": None,
            "parametersContext": "European heat pump market, 2024 figures, vendors and prices.",
            "parametersSchema": {"fields": [{"name": f, "type": "string"} for f in fields]},
        }

    def params(**values: object) -> dict:
        return {"schema": "parameters_v1", "parameters": values}

    return [
        {
            "overview": "One research task.",
            "tasks": [
                {
                    "objective": "Write a short market overview of European heat pumps",
                    "successCriteria": ["Three sources", "A report"],
                    "taskType": "research",
                }
            ],
        },
        select("web.search", ["query", "maxResults"], []),
        params(query="European heat pump market 2024", maxResults=5),
        {
            "decision": "continue",
            "reason": "Need the pages.",
            "criteriaMet": False,
            "next": select("ai.process", ["aiPrompt"], ["docList:round2_task1_action1_search"]),
        },
        params(aiPrompt="Summarise market size, vendors and prices."),
        {
            "decision": "continue",
            "reason": "Need the report.",
            "criteriaMet": False,
            "next": select(
                "document.generateReport", ["title"], ["docList:round2_task1_action2_processed"]
            ),
        },
        params(title="European heat pumps 2024"),
        {"decision": "stop", "reason": "Report written.", "criteriaMet": True},
        "The European heat pump market grew in 2024; see the report.",
    ]


async def one_run() -> list[tuple[str, int]]:
    store = MemoryStore()
    store.add("brief.txt", "text/plain", b"Focus on Germany and France.", label="round1_uploads")
    history = [
        HistoryEntry(role="user", round=1, content="Which heat pump vendors lead in Europe?"),
        HistoryEntry(role="assistant", round=1, content="Daikin, Viessmann and Vaillant lead."),
    ]
    state = RoundState(
        round=2, prompt="Write a market overview of European heat pumps.",
        history=history, max_steps=5,
    )  # fmt: skip
    with FakeOpenAIServer(script()) as server:
        async with OpenAICompatibleLLM(
            base_url=server.url, api_key="sk-bench", model="fake-model", max_retries=0
        ) as llm:
            async for _ in run_round(
                state, llm=llm, tools=FakeToolExecutor(), store=store, controls=AutoControls()
            ):
                pass
        server.assert_complete()
        rows = []
        for body in server.requests:
            fmt = (body.get("response_format") or {}).get("json_schema") or {}
            kind = KINDS.get(fmt.get("name", ""), "final answer" if body.get("stream") else "?")
            rows.append((kind, sum(len(m["content"]) for m in body["messages"]) // 4))
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = [asyncio.run(one_run()) for _ in range(parser.parse_args().runs)]
    per_call: dict[str, list[list[int]]] = defaultdict(list)
    for rows in runs:
        grouped: dict[str, list[int]] = defaultdict(list)
        for kind, tokens in rows:
            grouped[kind].append(tokens)
        for kind, values in grouped.items():
            per_call[kind].append(values)
    print(f"prompt tokens per call kind (median of {len(runs)} runs, chars // 4)")
    print(f"{'kind':<24}{'calls':>6}{'per call':>10}{'total':>8}")
    for kind in [*KINDS.values(), "final answer"]:
        samples = per_call.get(kind)
        if not samples:
            continue
        calls = len(samples[0])
        per = statistics.median(statistics.mean(s) for s in samples)
        total = statistics.median(sum(s) for s in samples)
        print(f"{kind:<24}{calls:>6}{per:>10.0f}{total:>8.0f}")


if __name__ == "__main__":
    main()
