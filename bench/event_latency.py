"""Event latency under concurrent load: from an event's commit to a WebSocket client.

Three processes on 127.0.0.1: the real ASGI app (poweron.asgi:application) under Daphne,
the fake OpenAI-compatible model server (tests/support/fake_openai.py, answering every
request with the demo model's policy, so any number of interleaved rounds can share it),
and this script's asyncio WebSocket clients (the `websockets` package). For each N, N
workflows (each with one uploaded note: a two-action React round, extract then report)
are started at once over their sockets. For every stored event, latency = the client's
receive time - the time the app committed it: the app process wraps recording.record to
note time.time() after the commit and adds it to the event's JSON (app code unchanged); the row's
own `at` (set at INSERT, before the commit) is shown beside it. Prints medians, p90s,
throughput and ratios against N=1; never asserts timings.

    .venv/bin/python bench/event_latency.py [--quick] [--reps R]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NOTES = b"""# Quarterly notes

Revenue grew 12 percent in the third quarter. Costs fell by 3 percent.
The team shipped the new search feature in August. Churn stayed below two percent.
"""
PROMPT = "Summarise my notes"
ROUND_TIMEOUT = 120.0
STARTUP_TIMEOUT = 30.0
SCHEMA_KINDS = {
    "TaskPlan": "taskplan",
    "ActionSelection": "select",
    "ActionParameters": "parameters",
    "RefinementDecision": "refine",
    "TaskReview": "review",
}


# --- the two server processes --------------------------------------------------------------


def demo_answer(body: dict[str, Any]) -> Any:
    """The demo model's answer to one chat-completions request, read from its prompt."""
    from workflows.engine.demo import DemoLLM

    prompt = body["messages"][-1]["content"]
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    if name in SCHEMA_KINDS:
        return DemoLLM().decide(SCHEMA_KINDS[name], prompt)
    return DemoLLM().final(prompt)


def serve_model() -> None:
    """Child process: the fake model server; prints its URL, serves until stdin closes."""
    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer([demo_answer] * 1_000_000) as server:
        print(server.url, flush=True)
        sys.stdin.read()


def serve_app(port: int) -> None:
    """Child process: Daphne serving the app, with commit times stamped on stored events."""
    import django

    django.setup()
    from daphne.cli import CommandLineInterface

    from workflows.contract import Envelope
    from workflows.execution import recording

    committed: dict[tuple[int, int | None], float] = {}
    record, as_json = recording.record, Envelope.as_json

    def stamped_record(*args: Any) -> Envelope:
        envelope = record(*args)
        committed[(envelope.workflow, envelope.seq)] = time.time()
        return envelope

    def stamped_json(envelope: Envelope) -> dict[str, Any]:
        data = as_json(envelope)
        if (at := committed.get((envelope.workflow, envelope.seq))) is not None:
            data["committedAt"] = at
        return data

    recording.record = stamped_record
    Envelope.as_json = stamped_json  # type: ignore[method-assign]
    CommandLineInterface().run(["-b", "127.0.0.1", "-p", str(port), "poweron.asgi:application"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"Daphne exited early:\n{log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"Daphne did not listen within {STARTUP_TIMEOUT:.0f} s")


def stop(process: subprocess.Popen) -> None:
    """End a child this script started, by its own handle."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --- the clients ---------------------------------------------------------------------------


def new_workflows(owner: Any, count: int) -> list[tuple[int, int]]:
    """`count` idle workflows, each with one uploaded note: (workflow id, upload id)."""
    from workflows import services

    made = []
    for _ in range(count):
        workflow = services.workflow_create(owner=owner, title="bench")
        upload = services.document_upload(workflow=workflow, name="notes.md", data=NOTES)
        made.append((workflow.pk, upload.pk))
    return made


async def watch(
    port: int, cookie: str, workflow_id: int, upload_id: int, start: asyncio.Barrier
) -> list[tuple[float, dict[str, Any]]]:
    """Connect, wait for every other client, send the message, collect events to the final one.

    The consumer handles the message only after its connect handler has subscribed it.
    """
    from websockets.asyncio.client import connect

    url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
    received: list[tuple[float, dict[str, Any]]] = []
    async with connect(
        url, origin="http://127.0.0.1", additional_headers={"Cookie": cookie}, proxy=None
    ) as socket_:
        await start.wait()
        command = {"action": "send", "text": PROMPT, "documents": [upload_id]}
        await socket_.send(json.dumps(command))
        async with asyncio.timeout(ROUND_TIMEOUT):
            async for raw in socket_:
                now = time.time()
                event = json.loads(raw)
                received.append((now, event))
                if event["type"] == "notice" and event["payload"]["level"] == "error":
                    raise RuntimeError(event["payload"]["text"])
                if event["type"] == "run" and event["payload"]["status"] != "stopping":
                    break
    return received


async def concurrent_rounds(port: int, cookie: str, owner: Any, count: int) -> dict[str, Any]:
    """Run `count` rounds at once; latencies (ms) of every stored event, and throughput."""
    from channels.db import database_sync_to_async

    made = await database_sync_to_async(new_workflows)(owner, count)
    start = asyncio.Barrier(count + 1)
    clients = [asyncio.create_task(watch(port, cookie, w, u, start)) for w, u in made]
    async with asyncio.timeout(ROUND_TIMEOUT):  # a client that cannot connect fails below
        await start.wait()
    started = time.time()
    results = await asyncio.gather(*clients)
    commit, row = [], []
    for received in results:
        for seen, event in received:
            if event.get("seq") is None:  # token deltas and notices are not stored
                continue
            row.append((seen - datetime.fromisoformat(event["at"]).timestamp()) * 1000)
            if "committedAt" in event:  # not when replayed from the database after a drop
                commit.append((seen - event["committedAt"]) * 1000)
    finished = max(received[-1][0] for received in results)
    completed = sum(r[-1][1]["payload"].get("status") == "completed" for r in results)
    return {"commit": commit, "row": row, "seconds": finished - started, "completed": completed}


def quantile(values: list[float], q: float) -> float:
    """The q-quantile by the nearest-rank method (p90: q=0.9)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


async def measure(port: int, sizes: list[int], reps: int) -> None:
    from asgiref.sync import sync_to_async
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    owner = await get_user_model().objects.acreate(username="bench")

    def login() -> str:
        client = Client()
        client.force_login(owner)
        return (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )

    cookie = await sync_to_async(login)()
    await concurrent_rounds(port, cookie, owner, 1)  # warm-up: imports, first connections
    rows = []
    for size in sizes:
        commit: list[float] = []
        row: list[float] = []
        seconds, completed = 0.0, 0
        for _ in range(reps):
            result = await concurrent_rounds(port, cookie, owner, size)
            commit += result["commit"]
            row += result["row"]
            seconds += result["seconds"]
            completed += result["completed"]
        rows.append((size, commit, row, seconds, completed))
    report(rows, reps)


def report(rows: list[tuple[int, list[float], list[float], float, int]], reps: int) -> None:
    print(
        "event latency under concurrent load: Daphne subprocess on 127.0.0.1, SQLite (WAL), "
        "in-memory channel layer, fake model server (demo policy), websockets clients"
    )
    print(
        f"each N: {reps} repetitions of N concurrent two-action React rounds, "
        "latency = client receive - commit of every stored event"
    )
    print()
    header = (
        f"{'N':>3}{'rounds ok':>10}{'events':>8}{'median ms':>11}{'p90 ms':>9}{'at->recv ms':>13}"
    )
    print(f"{header}{'events/s':>10}{'median x':>10}{'p90 x':>8}{'events/s x':>12}")
    base = None
    for size, commit, row, seconds, completed in rows:
        median, p90 = statistics.median(commit), quantile(commit, 0.9)
        rate = len(commit) / seconds
        base = base or (median, p90, rate)
        rounds = f"{completed}/{size * reps}"
        print(
            f"{size:>3}{rounds:>10}{len(commit):>8}{median:>11.2f}{p90:>9.2f}"
            f"{statistics.median(row):>13.2f}{rate:>10.1f}"
            f"{median / base[0]:>10.2f}{p90 / base[1]:>8.2f}{rate / base[2]:>12.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="N in {1, 4} only, 3 repetitions instead of 5"
    )
    parser.add_argument("--reps", type=int, help="repetitions per N")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        return serve_model()
    if args.serve_app:
        return serve_app(args.serve_app)
    sizes = [1, 4] if args.quick else [1, 4, 16]
    reps = args.reps or (3 if args.quick else 5)

    var_dir = Path(tempfile.mkdtemp(prefix="poweron-bench-"))
    for name in ("DATABASE_URL", "REDIS_URL", "MEDIA_ROOT", "POWERON_LLM_BASE_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        POWERON_VAR_DIR=str(var_dir),
        DJANGO_SETTINGS_MODULE="poweron.settings",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        LOG_LEVEL="WARNING",
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    me = [sys.executable, str(Path(__file__).resolve())]
    children: list[subprocess.Popen] = []
    try:
        model = subprocess.Popen(
            [*me, "--serve-model"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        children.append(model)
        assert model.stdout is not None
        os.environ.update(
            POWERON_LLM_BASE_URL=model.stdout.readline().strip(),
            POWERON_LLM_API_KEY="sk-bench",
            POWERON_LLM_MODEL="fake-model",
        )
        port, log = free_port(), var_dir / "daphne.log"
        with log.open("w") as output:
            app = subprocess.Popen(
                [*me, "--serve-app", str(port)], stdout=output, stderr=subprocess.STDOUT, cwd=ROOT
            )
        children.append(app)
        wait_for_port(port, app, log)
        asyncio.run(measure(port, sizes, reps))
        if "Traceback" in (logged := log.read_text()):
            print(f"\nDaphne logged errors; the end of its log:\n{logged[-3000:]}")
    finally:
        for child in reversed(children):
            stop(child)
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
