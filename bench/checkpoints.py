"""What durability costs: the checkpoint of one DBOS step, on SQLite and on PostgreSQL.

A DBOS workflow of N trivial steps, each through the product's own `Checkpoints.step` (the
same wrapper every model call, tool action and document write goes through), runs on a
SQLite system database in WAL mode (the `make run` default) and on the local PostgreSQL
(a temporary database), alternately, R times each. Then one scripted five-action React
round runs through the real durable runner on SQLite, and its recorded steps are counted,
so the cost per loop iteration can be read off. Prints medians and the ratio; never asserts.

    .venv/bin/python bench/checkpoints.py [--steps N] [--reps R] [--no-postgres]
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
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pgtemp import drop_database, optional_database, url_of  # noqa: E402

STEPS = 5
"""Actions of the scripted round whose recorded steps are counted."""


def setup_django(var_dir: str) -> None:
    os.environ.update(
        POWERON_VAR_DIR=var_dir, DJANGO_SETTINGS_MODULE="poweron.settings", LOG_LEVEL="WARNING"
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


async def measure(url: str, steps: int, workflow) -> float:
    """Milliseconds per step of one workflow of `steps` trivial checkpointed steps."""
    from dbos import DBOS, SetWorkflowID
    from django.conf import settings

    from workflows.execution import durable

    settings.POWERON_DBOS_DATABASE_URL = url
    await durable.launch()
    try:
        with SetWorkflowID(f"bench-{uuid.uuid4().hex}"):
            started = time.perf_counter()
            handle = await DBOS.start_workflow_async(workflow, steps)
            await handle.get_result(polling_interval_sec=0.01)
            return (time.perf_counter() - started) * 1000 / steps
    finally:
        DBOS.destroy()


async def steps_of_a_round(var_dir: str) -> tuple[int, int]:
    """(recorded steps, loop iterations) of one scripted five-action React round run through
    the durable runner on SQLite."""
    from asgiref.sync import sync_to_async
    from dbos import DBOS
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.host_overhead import PROMPT, PolicyLLM
    from tests.support.fake_tools import FakeToolExecutor
    from workflows import services
    from workflows.execution import durable, runner, setup

    setup.build_llm = lambda: PolicyLLM(STEPS)
    setup.build_tools = lambda **_: FakeToolExecutor()
    settings.POWERON_DBOS_DATABASE_URL = f"sqlite:///{var_dir}/round.sqlite"

    def open_round():
        owner = get_user_model().objects.get_or_create(username="bench")[0]
        workflow = services.workflow_create(owner=owner, max_steps=STEPS)
        return services.round_open(
            workflow_id=workflow.pk, owner=owner, text=PROMPT, document_ids=[]
        )

    workflow, message, _ = await sync_to_async(open_round)()
    await durable.launch()
    try:
        handle = await runner.start(durable.RunRef.of(workflow), message.pk, queued=False)
        await handle.get_result(polling_interval_sec=0.01)
        recorded = await DBOS.list_workflow_steps_async(handle.get_workflow_id())
        return len(recorded), STEPS
    finally:
        DBOS.destroy()


async def main(args: argparse.Namespace, var_dir: str) -> None:
    from dbos import DBOS

    from workflows.execution.checkpoints import Checkpoints

    async def noop() -> int:
        return 1

    @DBOS.workflow(name="bench.trivial_steps")
    async def trivial_steps(count: int) -> int:
        checkpoints = Checkpoints()
        for _ in range(count):
            await checkpoints.step("bench.step", noop)
        return count

    pg = None if args.no_postgres else optional_database()
    backends = {"SQLite (WAL)": f"sqlite:///{var_dir}/dbos.sqlite"}
    if pg:
        backends["PostgreSQL"] = url_of(pg)
    samples: dict[str, list[float]] = {name: [] for name in backends}
    try:
        for rep in range(args.reps + 1):  # the first round of each is a warm-up
            for name, url in backends.items():
                value = await measure(url, args.steps, trivial_steps)
                if rep:
                    samples[name].append(value)
        recorded, iterations = await steps_of_a_round(var_dir)
    finally:
        if pg:
            drop_database(pg)
        shutil.rmtree(var_dir, ignore_errors=True)

    print(
        f"checkpoint cost: one workflow of {args.steps} trivial steps, "
        f"{args.reps} runs per backend, alternating"
    )
    print(f"{'system database':<18} {'median ms/step':>15} {'p90 ms/step':>12} {'ratio':>7}")
    base = statistics.median(next(iter(samples.values())))
    for name, values in samples.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * len(ordered)) - 1)]
        median = statistics.median(values)
        print(f"{name:<18} {median:>15.2f} {p90:>12.2f} {median / base:>7.2f}")
    per_iteration = (recorded - 6) / iterations  # begin, prepare, index, plan, review, answer
    print(
        f"\na scripted {iterations}-action React round records {recorded} steps "
        f"({per_iteration:.1f} per loop iteration: model calls, the tool, the steering check)"
    )
    for name, values in samples.items():
        cost = statistics.median(values) * per_iteration
        print(f"  {name}: about {cost:.1f} ms of checkpoints per loop iteration")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    directory = tempfile.mkdtemp(prefix="poweron-bench-")
    setup_django(directory)
    asyncio.run(main(parser.parse_args(), directory))
