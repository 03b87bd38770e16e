"""A workflow that lives for many rounds: do its prompts stay the same size?

Twenty rounds of one workflow run through the engine (ScriptedLLM, fake tools that produce
about fifteen documents a round), each round seeing the workflow's history and every
document the earlier rounds produced, as the host hands them over. For round 2, 10 and 20
it prints the size of the task-plan prompt and of the first Stage-1 prompt (characters,
and characters // 4 as tokens), their ratio to round 2, the documents the workflow holds,
and whether any round stopped on a budget. Never asserts.

    .venv/bin/python bench/long_workflow.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.fake_tools import FakeToolExecutor  # noqa: E402
from tests.support.replies import params, review, select, stop, taskplan  # noqa: E402
from workflows.engine.loop.controls import AutoControls  # noqa: E402
from workflows.engine.loop.round import run_round  # noqa: E402
from workflows.engine.records.events import MessageEvent, StatusEvent  # noqa: E402
from workflows.engine.records.protocols import ActionResult, ProducedDocument  # noqa: E402
from workflows.engine.records.state import HistoryEntry, RoundState  # noqa: E402
from workflows.engine.testing import MemoryStore, ScriptedLLM  # noqa: E402

PAGES = 6


async def pages(params: Any, ctx: Any) -> ActionResult:
    """A scrape that fetches several pages, as web.scrape does."""
    documents = [
        ProducedDocument(name=f"page{n}.md", mime="text/markdown", data=f"# Page {n}\n".encode())
        for n in range(PAGES)
    ]
    return ActionResult(success=True, documents=documents, label="pages", notes=["6 pages"])


def script(round: int) -> list:
    """One research round: search, scrape, process, report; then the answer."""
    base = f"docList:round{round}_task1_action"
    return [
        taskplan(f"Research topic {round}", task_type="research"),
        select("web.search"), params(query=f"topic {round}"), {"decision": "continue"},
        select("web.scrape"), params(query=f"topic {round} pages"), {"decision": "continue"},
        select("ai.process", requiredInputDocuments=[f"{base}2_pages"],
               parametersSchema={"fields": [{"name": "aiPrompt", "type": "string"}]}),
        params(aiPrompt="Summarise the pages."), {"decision": "continue"},
        select("document.generateReport", requiredInputDocuments=[f"{base}3_processed"],
               parametersSchema={"fields": [{"name": "title", "type": "string"}]}),
        params(title=f"Topic {round}"), stop(),
        review(),
        f"Round {round}: the report on topic {round} is written.",
    ]  # fmt: skip


def history_of(events: list[Any], round: int, prompt: str) -> list[HistoryEntry]:
    """The entries the host keeps of a round: the user's message, each action's record with
    its documents, and the answer."""
    entries = [HistoryEntry(role="user", round=round, content=prompt)]
    for event in events:
        if isinstance(event, MessageEvent):
            entries.append(
                HistoryEntry(
                    role=event.role, round=round, task=event.task, action=event.action,
                    method=f"{event.method}.{event.name}" if event.method else "",
                    content=event.content[:600], summary=event.summary,
                    documents_label=event.documentsLabel,
                    documents=[f"docItem:{d.id}:{d.name}" for d in event.documents],
                    learnings=event.learnings, success=event.success,
                )
            )  # fmt: skip
    return entries


async def main(rounds: int) -> None:
    store, history = MemoryStore(), []
    sizes: dict[int, tuple[int, int, int]] = {}
    budget_stops = 0
    for round in range(1, rounds + 1):
        prompt = f"Research topic {round} and write a report."
        llm = ScriptedLLM(script(round))
        state = RoundState(round=round, prompt=prompt, history=history, max_steps=6)
        tools = FakeToolExecutor({"web.scrape": pages})
        events = [
            event
            async for event in run_round(
                state, llm=llm, tools=tools, store=store, controls=AutoControls()
            )
        ]
        budget_stops += sum(
            isinstance(e, StatusEvent) and e.code in ("token_budget", "time_budget") for e in events
        )
        plan = next(c for c in llm.calls if c.kind == "taskplan")
        select_call = next(c for c in llm.calls if c.kind == "select")
        sizes[round] = (
            sum(len(m["content"]) for m in plan.messages),
            sum(len(m["content"]) for m in select_call.messages),
            len(store.index()),
        )
        history = [*history, *history_of(events, round, prompt)]
    print(f"a workflow of {rounds} research rounds (~{PAGES + 4} documents per round)")
    print(f"{'round':>5}{'documents':>11}{'task plan chars':>17}{'~tokens':>9}{'x r2':>6}"
          f"{'Stage 1 chars':>15}{'~tokens':>9}{'x r2':>6}")  # fmt: skip
    plan2, select2, _ = sizes[min(2, rounds)]
    for round in sorted({2, 10, rounds} & set(sizes)):
        plan, select_size, documents = sizes[round]
        print(
            f"{round:>5}{documents:>11}{plan:>17}{plan // 4:>9}{plan / plan2:>6.2f}"
            f"{select_size:>15}{select_size // 4:>9}{select_size / select2:>6.2f}"
        )
    print(f"rounds stopped by a budget: {budget_stops}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args().rounds))
