"""Host overhead per loop iteration: the bare engine, the durable runner on SQLite and on
PostgreSQL, and LangGraph's prebuilt ReAct agent with and without its SQLite checkpointer.

The same scripted React task of N actions (N = 10 and 100; a policy model with zero latency
answering each call by its kind, fake tools) runs (a) through `run_round` alone, events kept
in memory, with the narrow schemas of a local model (built from the documents that exist; the
documents get ids no earlier run had, as a database gives them) and the stable schemas of a
hosted provider, and (b) as a durable round in a child process per database: a DBOS workflow whose
model calls, actions and document writes are checkpointed, every event stored (SQLite in WAL
mode, or a temporary PostgreSQL database on 127.0.0.1:5432 that also holds the checkpoints),
documents under MEDIA_ROOT, events broadcast on the in-memory layer to one draining viewer.
LangGraph's `create_react_agent` runs N iterations (one model call and one trivial tool call
each) over a scripted chat model, with no checkpointer, `SqliteSaver` and `AsyncSqliteSaver`.
Runs are interleaved (every system once per repetition, order rotated). Prints medians, p90s,
ratios, where the runner's time goes, and one verdict line per goal; never asserts.

    .venv/bin/python bench/host_overhead.py [--quick] [--runs N] [--sizes 10,100] [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.host_overhead_langgraph import LangGraph  # noqa: E402
from bench.host_overhead_report import report  # noqa: E402
from bench.pgtemp import drop_database, optional_database, url_of  # noqa: E402
from tests.support.fake_tools import FakeToolExecutor  # noqa: E402
from tests.support.replies import cont, params, review, select, stop, taskplan  # noqa: E402
from workflows.engine.loop.controls import AutoControls  # noqa: E402
from workflows.engine.loop.round import run_round  # noqa: E402
from workflows.engine.records.state import Budgets, RoundState  # noqa: E402
from workflows.engine.testing import MemoryStore, ScriptedLLM  # noqa: E402

PROMPT = "Write a short market overview of European heat pumps."
ANSWER = " ".join(["The European heat pump market grew in 2024; the report has the details."] * 4)
# One cycle of five actions (action, parameter fields, label of the previous action's
# documents it reads, parameter values); a task of N actions repeats it.
CYCLE: list[tuple[str, list[str], str, dict[str, Any]]] = [
    ("web.search", ["query"], "", {"query": "European heat pump market 2024"}),
    ("web.scrape", ["query"], "", {"query": "heat pump vendors Europe"}),
    ("ai.process", ["aiPrompt"], "pages", {"aiPrompt": "Summarise vendors and prices."}),
    ("document.extract", [], "processed", {}),
    ("document.generateReport", ["title"], "extract", {"title": "European heat pumps 2024"}),
]


class PolicyLLM(ScriptedLLM):
    """Answers each call by its kind, for a task of `steps` actions: the plan, each action
    (the next one proposed by refine, as the engine asks), parameters, stop after the last."""

    label = "policy model"

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.proposed = 0

    def _next(self, messages: Sequence[Any], kind: str, output: str | None) -> str:
        self.replies.append(self.reply(kind))
        return super()._next(messages, kind, output)

    def reply(self, kind: str) -> Any:
        match kind:
            case "taskplan":
                return taskplan(PROMPT, task_type="research")
            case "select":
                return self.propose()
            case "parameters":
                return params(**CYCLE[(self.proposed - 1) % len(CYCLE)][3])
            case "refine":
                return cont(next=self.propose()) if self.proposed < self.steps else stop()
            case "review":
                return review()
        return ANSWER

    def propose(self) -> dict[str, Any]:
        self.proposed += 1
        action, fields, reads, _ = CYCLE[(self.proposed - 1) % len(CYCLE)]
        documents = [f"docList:round1_task1_action{self.proposed - 1}_{reads}"] if reads else []
        schema = {"fields": [{"name": f, "type": "string", "required": True} for f in fields]}
        return select(action, requiredInputDocuments=documents, parametersSchema=schema)


# --- (a) the bare engine and LangGraph, in this process ---------------------------------------


class FreshStore(MemoryStore):
    """Documents in memory with ids no earlier run used, as a database gives them: a narrow
    schema enumerates the references that exist, so a run cannot reuse another run's."""

    runs = 0

    def __init__(self) -> None:
        super().__init__()
        FreshStore.runs += 1
        self.prefix = f"r{FreshStore.runs}-"

    async def save(self, document: Any, **where: Any) -> Any:
        ref = await super().save(document, **where)
        fresh = ref.model_copy(update={"id": self.prefix + ref.id})
        self.documents[-1] = (fresh, self.documents[-1][1])
        return fresh


async def bare_round(steps: int, schemas: str = "narrow") -> dict[str, Any]:
    """One round through the engine alone (`schemas`: "narrow", as for a local model, each
    call's schema built from the documents that exist; "stable", as for a hosted one)."""
    llm = PolicyLLM(steps)
    state = RoundState(
        round=1,
        prompt=PROMPT,
        max_steps=steps,
        budgets=Budgets(tokens=None, seconds=None),
        schemas=schemas,  # type: ignore[arg-type]
    )
    tools, events = FakeToolExecutor(), []
    started = time.perf_counter()
    async for event in run_round(
        state, llm=llm, tools=tools, store=FreshStore(), controls=AutoControls()
    ):
        events.append(event)
    seconds = time.perf_counter() - started
    assert len(tools.calls) == steps and events[-1].status == "completed", events[-1]
    return {"seconds": seconds, "events": len(events), "calls": len(llm.calls)}


# --- (b) the durable runner, in a child process per database ----------------------------------


class Timings:
    """Time and count what the runner spends: storing batches, DBOS operations."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.seconds: dict[str, float] = {"store": 0.0, "dbos": 0.0, "inside": 0.0}
        self.counts: dict[str, int] = {"batches": 0, "steps": 0, "recv": 0}

    def install(self) -> None:
        from dbos import DBOS

        from workflows.execution import recording
        from workflows.execution.runner import RoundRunner

        # The runner stores pending events with `store` and `record_many`; a runner before
        # batching (to compare with) stored each event with `record` and `recording.record`.
        storing = "store" if hasattr(RoundRunner, "store") else "record"
        writing = "record_many" if hasattr(recording, "record_many") else "record"
        store, write = getattr(RoundRunner, storing), getattr(recording, writing)
        step, recv = DBOS.run_step_async, DBOS.recv_async

        async def timed_store(*args: Any, **kwargs: Any) -> None:
            started = time.perf_counter()
            try:
                await store(*args, **kwargs)
            finally:
                self.seconds["store"] += time.perf_counter() - started

        def counted_write(*args: Any, **kwargs: Any) -> Any:
            self.counts["batches"] += 1
            return write(*args, **kwargs)

        async def timed_step(options: Any, call: Callable[[], Awaitable[Any]]) -> Any:
            async def inside() -> Any:
                begun = time.perf_counter()
                try:
                    return await call()
                finally:
                    self.seconds["inside"] += time.perf_counter() - begun

            self.counts["steps"] += 1
            started = time.perf_counter()
            try:
                return await step(options, inside)
            finally:
                self.seconds["dbos"] += time.perf_counter() - started

        async def timed_recv(*args: Any, **kwargs: Any) -> Any:
            self.counts["recv"] += 1
            started = time.perf_counter()
            try:
                return await recv(*args, **kwargs)
            finally:
                self.seconds["dbos"] += time.perf_counter() - started

        setattr(RoundRunner, storing, timed_store)
        setattr(recording, writing, counted_write)
        DBOS.run_step_async = timed_step  # type: ignore[method-assign]
        DBOS.recv_async = timed_recv  # type: ignore[method-assign]


def child(database_url: str) -> None:
    """Serve rounds on stdin/stdout: {"steps": N} in, the measurement out, one JSON a line."""
    var_dir = tempfile.mkdtemp(prefix="poweron-bench-")
    for name in ("DATABASE_URL", "REDIS_URL", "MEDIA_ROOT", "POWERON_LLM_BASE_URL"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    os.environ.update(
        POWERON_VAR_DIR=var_dir,
        DJANGO_SETTINGS_MODULE="poweron.settings",
        LOG_LEVEL="WARNING",
        POWERON_TOKEN_BUDGET="0",
        POWERON_TIME_BUDGET="0",
    )
    try:
        asyncio.run(serve())
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


async def serve() -> None:
    import django
    from channels.db import database_sync_to_async
    from django.core.management import call_command

    django.setup()
    await database_sync_to_async(call_command)("migrate", verbosity=0)
    from dbos import DBOS
    from django.contrib.auth import get_user_model

    from workflows.execution import durable, setup

    steps = {"n": 0}
    setup.build_llm = lambda: PolicyLLM(steps["n"])
    setup.build_tools = lambda **_: FakeToolExecutor()
    timings = Timings()
    timings.install()
    owner = await get_user_model().objects.acreate(username="bench")
    await durable.launch()
    print(json.dumps({"ready": True}), flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        steps["n"] = json.loads(line)["steps"]
        timings.reset()
        result = await runner_round(owner, steps["n"])
        print(json.dumps({**result, **timings.seconds, **timings.counts}), flush=True)
    DBOS.destroy()


async def runner_round(owner: Any, steps: int) -> dict[str, Any]:
    """One durable round, watched by one viewer on the in-memory layer."""
    from channels.db import database_sync_to_async
    from channels.layers import get_channel_layer

    from workflows import services
    from workflows.events import broadcast
    from workflows.execution import durable, runner
    from workflows.models import ChatWorkflow

    def open_round():
        workflow = services.workflow_create(owner=owner, title="bench")
        ChatWorkflow.objects.filter(pk=workflow.pk).update(max_steps=steps)
        return services.round_open(
            workflow_id=workflow.pk, owner=owner, text=PROMPT, document_ids=[]
        )

    workflow, message, _ = await database_sync_to_async(open_round)()
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(broadcast.viewers_group(workflow.pk), channel)
    received = 0

    async def drain() -> None:
        nonlocal received
        while True:
            await layer.receive(channel)
            received += 1

    viewer = asyncio.create_task(drain())
    started = time.perf_counter()
    handle = await runner.start(durable.RunRef.of(workflow), message.pk, queued=False)
    status = await handle.get_result(polling_interval_sec=0.005)
    seconds = time.perf_counter() - started
    await asyncio.sleep(0)  # let the viewer take the last event
    viewer.cancel()
    await layer.group_discard(broadcast.viewers_group(workflow.pk), channel)
    assert status == "completed", status
    stored = await workflow.events.acount()
    return {"seconds": seconds, "stored": stored, "received": received}


class Child:
    """A child process running durable rounds on one database."""

    def __init__(self, database_url: str) -> None:
        command = [sys.executable, __file__, "--child", database_url]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert json.loads(self.read())["ready"]

    def read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the child exited with {self.process.wait()}")
        return line

    async def round(self, steps: int) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"steps": steps}) + "\n")
        self.process.stdin.flush()
        return json.loads(await asyncio.to_thread(self.read))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


# --- measuring (the report: host_overhead_report.py) ----------------------------------------------


async def measure(sizes: list[int], runs: int, postgres: str | None, directory: str) -> None:
    children = {"sqlite": Child("")}
    if postgres:
        children["postgres"] = Child(url_of(postgres))
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    try:
        for size in sizes:
            graph = LangGraph(size, directory, prompt=PROMPT, answer=ANSWER)
            calls: dict[str, Callable[[], Awaitable[dict[str, Any]]]] = {
                "bare": lambda size=size: bare_round(size),
                "bare_stable": lambda size=size: bare_round(size, "stable"),
                **{name: (lambda c=c, size=size: c.round(size)) for name, c in children.items()},
                "lg_bare": graph.bare,
                "lg_sqlite": graph.sqlite,
                "lg_async": graph.async_sqlite,
            }
            names = list(calls)
            for rep in range(runs + 1):  # the first repetition warms up
                turn = names[rep % len(names) :] + names[: rep % len(names)]
                for name in turn:
                    result = await calls[name]()
                    if rep:
                        results.setdefault((name, size), []).append(result)
    finally:
        for each in children.values():
            each.close()
    report(sizes, runs, results)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 9")
    parser.add_argument("--runs", type=int, help="measured runs of each system and size")
    parser.add_argument("--sizes", default="10,100", help="iterations per task")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 9)
    sizes = [int(size) for size in args.sizes.split(",")]
    postgres = None if args.no_postgres else optional_database()
    directory = tempfile.mkdtemp(prefix="poweron-langgraph-")
    try:
        asyncio.run(measure(sizes, runs, postgres, directory))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if postgres:
            drop_database(postgres)


if __name__ == "__main__":
    main()
