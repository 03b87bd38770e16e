"""Host overhead per loop iteration: the bare engine against the real runner path.

The same scripted React round (five actions, ScriptedLLM and FakeToolExecutor, no model
latency) runs (a) through run_round alone, collecting the typed events in memory, and
(b) as a durable round (a DBOS workflow whose model calls, actions and document writes are
checkpointed on SQLite), which stores each event with recording.record on SQLite (WAL, a
temporary POWERON_VAR_DIR), keeps produced documents under MEDIA_ROOT, and broadcasts it on
the in-memory channel layer to one draining viewer. Runs alternate,
so noise on the shared machine hits both alike. Prints medians and p90s, never asserts.

    .venv/bin/python bench/host_overhead.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.replies import cont, params, review, select, stop, taskplan  # noqa: E402
from workflows.engine.controls import AutoControls  # noqa: E402
from workflows.engine.round import run_round  # noqa: E402
from workflows.engine.state import RoundState  # noqa: E402
from workflows.engine.testing import FakeToolExecutor, MemoryStore, ScriptedLLM  # noqa: E402

PROMPT = "Write a short market overview of European heat pumps."
ANSWER = " ".join(["The European heat pump market grew in 2024; the report has the details."] * 4)
# (action, parameter fields, input documents, parameter values): five steps of one task.
ACTIONS: list[tuple[str, list[str], list[str], dict[str, Any]]] = [
    ("web.search", ["query"], [], {"query": "European heat pump market 2024"}),
    ("web.scrape", ["query"], [], {"query": "heat pump vendors Europe"}),
    (
        "ai.process",
        ["aiPrompt"],
        ["docList:round1_task1_action2_pages"],
        {"aiPrompt": "Summarise market size, vendors and prices."},
    ),
    ("document.extract", [], ["docList:round1_task1_action3_processed"], {}),
    (
        "document.generateReport",
        ["title"],
        ["docList:round1_task1_action4_extract"],
        {"title": "European heat pumps 2024"},
    ),
]
STEPS = len(ACTIONS)


def script() -> list:
    """The model's replies for one round: plan, five select/parameters/refine steps, answer."""
    replies: list = [taskplan(PROMPT, task_type="research")]
    for number, (action, fields, docs, values) in enumerate(ACTIONS, start=1):
        schema = {"fields": [{"name": f, "type": "string"} for f in fields]}
        replies += [
            select(action, requiredInputDocuments=docs, parametersSchema=schema),
            params(**values),
            stop() if number == STEPS else cont(),
        ]
    return [*replies, review(), ANSWER]


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (p90: q=0.9)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def bare_round() -> tuple[float, int, int]:
    """One round through the engine alone: seconds, events yielded, of which token deltas."""
    llm = ScriptedLLM(script())
    state = RoundState(round=1, prompt=PROMPT, max_steps=STEPS)
    events = []
    started = time.perf_counter()
    async for event in run_round(
        state, llm=llm, tools=FakeToolExecutor(), store=MemoryStore(), controls=AutoControls()
    ):
        events.append(event)
    elapsed = time.perf_counter() - started
    llm.assert_complete()
    return elapsed, len(events), sum(event.type == "delta" for event in events)


class Timings:
    """Wall-clock samples of the host's steps, collected by wrapping its functions."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {"record": [], "broadcast": [], "emit": []}

    def wrap_sync(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.samples[name].append(time.perf_counter() - started)

        return timed

    def wrap_async(self, name: str, function: Callable[..., Any], skip=None) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*args, **kwargs)
            finally:
                if skip is None or not skip(*args, **kwargs):
                    self.samples[name].append(time.perf_counter() - started)

        return timed


def django_setup(var_dir: str) -> None:
    """Point the project at a temporary directory (SQLite in WAL mode) and migrate it."""
    for name in ("DATABASE_URL", "REDIS_URL", "MEDIA_ROOT", "POWERON_LLM_BASE_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        POWERON_VAR_DIR=var_dir, DJANGO_SETTINGS_MODULE="poweron.settings", LOG_LEVEL="WARNING"
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def patch_host(timings: Timings) -> None:
    """Give every run the scripted model and fake tools, and time the host's steps."""
    from workflows.execution import recording, setup
    from workflows.execution.runner import RoundRunner
    from workflows.live import broadcast

    setup.build_llm = lambda: ScriptedLLM(script())
    setup.build_tools = lambda **_: FakeToolExecutor()
    recording.record = timings.wrap_sync("record", recording.record)
    broadcast.broadcast = timings.wrap_async("broadcast", broadcast.broadcast)
    RoundRunner.emit = timings.wrap_async(  # type: ignore[method-assign]
        "emit", RoundRunner.emit, skip=lambda run, event: event.type == "delta"
    )


async def runner_round(owner: Any) -> tuple[float, int, int]:
    """One round through RoundRunner, watched by one viewer: seconds, stored, received."""
    from channels.db import database_sync_to_async
    from channels.layers import get_channel_layer

    from workflows import services
    from workflows.execution import runner
    from workflows.live import broadcast

    def open_round():
        workflow = services.workflow_create(owner=owner, title="bench", max_steps=STEPS)
        return services.round_open(
            workflow_id=workflow.pk, owner=owner, text=PROMPT, document_ids=[]
        )

    workflow, message, _ = await database_sync_to_async(open_round)()
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(broadcast.viewers_group(workflow.pk), channel)
    received: list[dict[str, Any]] = []

    async def drain() -> None:
        while True:
            received.append(await layer.receive(channel))

    viewer = asyncio.create_task(drain())
    started = time.perf_counter()
    handle = await runner.start(workflow.pk, message.round, message.pk, queued=False)
    status = await handle.get_result(polling_interval_sec=0.005)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0)  # let the viewer take the last event
    viewer.cancel()
    await layer.group_discard(broadcast.viewers_group(workflow.pk), channel)
    assert status == "completed", status
    stored = await workflow.events.acount()
    return elapsed, stored, len(received)


async def measure(runs: int, warmup: int) -> None:
    from dbos import DBOS
    from django.contrib.auth import get_user_model
    from django.db import connection

    from workflows.execution import durable

    timings = Timings()
    patch_host(timings)
    owner = await get_user_model().objects.acreate(username="bench")
    await durable.launch()  # the runner path is a durable workflow: checkpoints included

    def journal_mode() -> str:
        with connection.cursor() as cursor:
            return cursor.execute("PRAGMA journal_mode").fetchone()[0]

    from channels.db import database_sync_to_async

    mode = await database_sync_to_async(journal_mode)()
    bare: list[float] = []
    host: list[float] = []
    counts = (0, 0, 0, 0)
    for index in range(warmup + runs):
        if index == warmup:
            for samples in timings.samples.values():
                samples.clear()
        seconds, events, deltas = await bare_round()
        host_seconds, stored, received = await runner_round(owner)
        if index >= warmup:
            bare.append(seconds)
            host.append(host_seconds)
            counts = (events, deltas, stored, received)
    DBOS.destroy()
    report(bare, host, counts, timings, runs=runs, mode=mode)


def report(
    bare: list[float],
    host: list[float],
    counts: tuple[int, int, int, int],
    timings: Timings,
    *,
    runs: int,
    mode: str,
) -> None:
    events, deltas, stored, received = counts
    ms = 1000 / STEPS
    bare_med, host_med = statistics.median(bare) * ms, statistics.median(host) * ms
    print(
        f"host overhead per loop iteration: {STEPS}-action React round, zero model latency, "
        f"{runs} runs each (alternating), SQLite journal_mode={mode}, in-memory channel layer"
    )
    print(
        f"engine yields {events} events per round ({deltas} token deltas); the runner stores "
        f"{stored} (deltas coalesced; user message and final status added), broadcasts {received}"
    )
    print()
    print(f"{'per iteration (round / actions)':<36}{'median ms':>11}{'p90 ms':>9}{'ratio':>8}")
    print(f"{'(a) bare engine':<36}{bare_med:>11.2f}{quantile(bare, 0.9) * ms:>9.2f}{1:>8.2f}")
    ratio = host_med / bare_med
    print(f"{'(b) runner path':<36}{host_med:>11.2f}{quantile(host, 0.9) * ms:>9.2f}{ratio:>8.2f}")
    overhead = [(h - b) * ms for h, b in zip(host, bare, strict=True)]
    print(f"{'host overhead (b - a)':<36}{statistics.median(overhead):>11.2f}")
    per_event = statistics.median((h - b) * 1000 / stored for h, b in zip(host, bare, strict=True))
    print(f"{'  of which per stored event':<36}{per_event:>11.2f}")
    print()
    print(f"{'per stored event, measured directly':<36}{'median ms':>11}{'p90 ms':>9}{'count':>8}")
    names = {
        "emit": "emit: store + broadcast (awaited)",
        "record": "  recording.record (in thread)",
        "broadcast": "  broadcast.broadcast (all, deltas too)",
    }
    for key, label in names.items():
        samples = [s * 1000 for s in timings.samples[key]]
        median, p90 = statistics.median(samples), quantile(samples, 0.9)
        print(f"{label:<36}{median:>11.3f}{p90:>9.3f}{len(samples):>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 runs instead of 40")
    parser.add_argument("--runs", type=int, help="measured runs of each path")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 40)
    var_dir = tempfile.mkdtemp(prefix="poweron-bench-")
    try:
        django_setup(var_dir)
        asyncio.run(measure(runs, warmup=2))
    finally:
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
