"""Live delivery under load: N concurrent runs, 3 viewers each, 30% of them reconnecting,
on one and on two Daphne processes, side by side.

The production topology on 127.0.0.1: PostgreSQL (a temporary database) and Redis
(database 13, flushed), one `run_workers` process running every round, D Daphne processes
serving the viewers (viewer i of a run on Daphne i mod D), the fake model server answering
with the demo model's policy (0.15 s per call, the answer streamed a word per 10 ms), and
this script's `websockets` clients. Each run is a two-action React round (extract, report)
over one uploaded note. For each stored event, latency = the client's receive time - the
time the process that stored it committed it (that process wraps `recording.record` and adds
the time to the event's JSON; app code unchanged). Prints p50/p95/p99, stored events/s, the
answer text delivered live, and what must be 0: gaps, duplicates, viewers that never saw
the final status, answers not delivered whole. Never asserts.

    .venv/bin/python bench/event_latency.py [--sizes 10,25,50] [--daphnes 1,2] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_processes import (  # noqa: E402
    free_port,
    listening,
    serve_app,
    serve_model,
    serve_worker,
    stop,
    wait_for,
)
from bench.pgtemp import create_database, drop_database, url_of  # noqa: E402
from bench.stats import quantile  # noqa: E402

NOTES = b"""# Quarterly notes

Revenue grew 12 percent in the third quarter. Costs fell by 3 percent.
The team shipped the new search feature in August. Churn stayed below two percent.
"""
PROMPT = "Summarise my notes"
VIEWERS = 3
RECONNECTING = 0.3
ROUND_TIMEOUT = 240.0
REDIS = "redis://127.0.0.1:6379/13"


# --- the clients -----------------------------------------------------------------------------


def new_workflows(owner: Any, count: int) -> list[tuple[int, int]]:
    """`count` idle workflows, each with one uploaded note: (workflow id, upload id)."""
    from workflows import services

    made = []
    for _ in range(count):
        workflow = services.workflow_create(owner=owner, title="bench")
        upload = services.document_upload(workflow=workflow, name="notes.md", data=NOTES)
        made.append((workflow.pk, upload.pk))
    return made


class Viewer:
    """One socket watching one workflow; it may drop and reconnect once mid-run."""

    def __init__(self, port: int, cookie: str, workflow_id: int, reconnect: bool) -> None:
        self.url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
        self.cookie = cookie
        self.reconnect = reconnect
        self.received: list[tuple[float, dict[str, Any]]] = []
        self.finished = False
        self.reconnects = 0
        """Connections that failed or closed before the final status, past the planned drop."""
        self.connected: list[list[float]] = []
        """[opened, closed] times of each connection: an event committed while the viewer was
        away reaches it by replay, and its wait is not delivery latency."""

    async def watch(self, start: asyncio.Event, send: dict[str, Any] | None) -> None:
        from websockets.exceptions import ConnectionClosed, InvalidHandshake

        from tests.support.sockets import connect

        last, drop_at = 0, (random.uniform(0.5, 4.0) if self.reconnect else None)
        headers = {"Cookie": self.cookie}
        try:
            async with asyncio.timeout(ROUND_TIMEOUT):
                async with connect(self.url, additional_headers=headers,
                                   proxy=None) as socket_:  # fmt: skip
                    self.connected.append([time.time(), float("inf")])
                    await start.wait()
                    if send:
                        await socket_.send(json.dumps(send))
                    began = time.monotonic()
                    while True:
                        wait = None if drop_at is None else drop_at - (time.monotonic() - began)
                        if wait is not None and wait <= 0:
                            break  # drop the connection mid-run
                        try:
                            raw = await asyncio.wait_for(socket_.recv(), wait)
                        except TimeoutError:
                            break
                        if self.take(raw):
                            return
                        last = self.received[-1][1]["seq"] or last
                self.connected[-1][1] = time.time()
                await asyncio.sleep(random.uniform(0.2, 1.0))
                while True:  # as the page does: reconnect until it works, replay from `last`
                    url = f"{self.url}&after={last}"
                    try:
                        async with connect(url, additional_headers=headers, proxy=None) as socket_:
                            self.connected.append([time.time(), float("inf")])
                            async for raw in socket_:
                                if self.take(raw):
                                    return
                                last = self.received[-1][1]["seq"] or last
                    except (OSError, InvalidHandshake, ConnectionClosed):
                        pass
                    self.reconnects += 1  # closed or refused before the final status
                    self.connected[-1][1] = min(self.connected[-1][1], time.time())
                    await asyncio.sleep(0.5)
        except TimeoutError:
            return  # an unfinished viewer: counted

    def live(self, committed: float) -> bool:
        """Whether the viewer was connected when this event was committed."""
        return any(opened <= committed <= closed for opened, closed in self.connected)

    def take(self, raw: str) -> bool:
        event = json.loads(raw)
        self.received.append((time.time(), event))
        self.finished = event["type"] == "run" and event["payload"]["status"] in (
            "completed", "failed", "stopped")  # fmt: skip
        return self.finished


def streamed_text(events: list[dict[str, Any]]) -> tuple[str, int]:
    """The answer as a page builds it from deltas, and how much of it came in live frames."""
    text, attempt, live = "", None, 0
    for event in events:
        if event["type"] != "delta":
            continue
        piece = event["payload"]
        if piece["attempt"] != attempt:
            text, attempt = "", piece["attempt"]
        offset, more = piece["offset"], piece["text"]
        if offset <= len(text) < offset + len(more):
            added = more[len(text) - offset :]
            text += added
            live += len(added) if event["seq"] is None else 0
    return text, live


async def concurrent_runs(ports: list[int], cookie: str, owner: Any, count: int) -> dict:
    """Run `count` rounds at once, watched by 3 viewers each; every figure of one row."""
    from channels.db import database_sync_to_async

    made = await database_sync_to_async(new_workflows)(owner, count)
    start = asyncio.Event()
    viewers, tasks = [], []
    for run, (workflow_id, upload_id) in enumerate(made):
        send = {"action": "send", "text": PROMPT, "documents": [upload_id]}
        for index in range(VIEWERS):
            viewer = Viewer(
                ports[(run * VIEWERS + index) % len(ports)],
                cookie,
                workflow_id,
                reconnect=index > 0 and random.random() < RECONNECTING * VIEWERS / 2,
            )
            viewers.append(viewer)
            tasks.append(asyncio.create_task(viewer.watch(start, send if index == 0 else None)))
    await asyncio.sleep(1.0 + count * 0.02)  # every socket is connected and subscribed
    started = time.time()
    start.set()
    await asyncio.gather(*tasks)
    latencies, replays, stored_seen = [], [], set()
    gaps = duplicates = unfinished = incomplete = 0
    live_chars = answer_chars = 0
    for viewer in viewers:
        events = [event for _, event in viewer.received]
        seqs = [e["seq"] for e in events if e["seq"] is not None]
        duplicates += len(seqs) - len(set(seqs))
        gaps += int(sorted(set(seqs)) != list(range(1, max(seqs, default=0) + 1)))
        unfinished += not viewer.finished
        answers = [
            e for e in events if e["type"] == "message" and e["payload"]["role"] == "assistant"
        ]
        text, live = streamed_text(events)
        if answers:
            incomplete += not answers[-1]["payload"]["content"].endswith(text) or not text
            if not viewer.reconnect:
                live_chars, answer_chars = live_chars + live, answer_chars + len(text)
        for seen, event in viewer.received:
            if event["seq"] is not None and "committedAt" in event:
                waited = (seen - event["committedAt"]) * 1000
                (latencies if viewer.live(event["committedAt"]) else replays).append(waited)
                stored_seen.add((event["workflow"], event["seq"]))
    finished = max((v.received[-1][0] for v in viewers if v.received), default=started)
    completed = sum(
        v.finished and v.received[-1][1]["payload"]["status"] == "completed" for v in viewers
    )
    return {
        "latencies": latencies, "replays": replays, "stored": len(stored_seen),
        "seconds": finished - started,
        "gaps": gaps, "duplicates": duplicates, "unfinished": unfinished,
        "incomplete": incomplete, "completed": completed, "viewers": len(viewers),
        "reconnecting": sum(v.reconnect for v in viewers),
        "unplanned": sum(v.reconnects for v in viewers),
        "live": live_chars / answer_chars if answer_chars else 0.0,
    }  # fmt: skip


async def measure(ports_by_setup: dict[int, list[int]], sizes: list[int], owner_name: str) -> list:
    from asgiref.sync import sync_to_async
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    owner = await get_user_model().objects.acreate(username=owner_name)

    def login() -> str:
        client = Client()
        client.force_login(owner)
        return (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )

    cookie = await sync_to_async(login)()
    rows = []
    for daphnes, ports in ports_by_setup.items():
        await concurrent_runs(ports, cookie, owner, 2)  # warm-up: imports, first connections
        for size in sizes:
            rows.append((daphnes, size, await concurrent_runs(ports, cookie, owner, size)))
    return rows


def report(rows: list) -> None:
    print(
        "live delivery under load: PostgreSQL + Redis on 127.0.0.1, one run_workers process, "
        "D Daphne processes for the viewers, fake model (demo policy, 0.15 s per call)"
    )
    print(
        f"each row: N concurrent two-action rounds, {VIEWERS} viewers each, about "
        f"{RECONNECTING:.0%} dropping and reconnecting mid-run; latency = receive - commit"
    )
    print()
    print(
        f"{'D':>2}{'N':>4}{'runs ok':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'replay p50':>11}{'events/s':>10}"
        f"{'live text':>11}{'gaps':>6}{'dups':>6}{'unfinished':>11}{'not whole':>10}"
        f"{'re-conn':>8}"
    )
    for daphnes, size, r in rows:
        lat = r["latencies"]
        runs_ok = f"{r['completed'] // VIEWERS}/{size}"
        p50, p95, p99 = (quantile(lat, q) for q in (0.5, 0.95, 0.99))
        print(
            f"{daphnes:>2}{size:>4}{runs_ok:>9}{p50:>9.0f}{p95:>9.0f}{p99:>9.0f}"
            f"{max(lat, default=0):>9.0f}"
            f"{f'{quantile(replays, 0.5):.0f}' if (replays := r['replays']) else '-':>11}"
            f"{r['stored'] / r['seconds']:>10.0f}{r['live']:>11.1%}"
            f"{r['gaps']:>6}{r['duplicates']:>6}{r['unfinished']:>11}{r['incomplete']:>10}"
            f"{r['unplanned']:>8}"
        )
    print(
        "\np50/p95/p99/max: events committed while the viewer was connected; replay p50: "
        "events committed while a reconnecting viewer was away (their wait includes the time "
        "away)\nlive text: share of each answer that reached viewers who stayed connected in live "
        "frames (the rest came from the stored text); gaps, dups, unfinished and not whole "
        "count viewers and must be 0\nre-conn: reconnections nobody planned (a socket closed or "
        "refused before the final status)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,25,50", help="concurrent runs per row")
    parser.add_argument("--daphnes", default="1,2", help="Daphne processes per setup")
    parser.add_argument("--quick", action="store_true", help="N = 10 on one Daphne only")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        return serve_model()
    if args.serve_app:
        return serve_app(args.serve_app)
    if args.serve_worker:
        return serve_worker()
    sizes = [10] if args.quick else [int(n) for n in args.sizes.split(",")]
    setups = [1] if args.quick else [int(n) for n in args.daphnes.split(",")]

    import redis

    redis.Redis.from_url(REDIS).flushdb()
    database = create_database("poweron_load")
    var_dir = Path(tempfile.mkdtemp(prefix="poweron-load-"))
    for name in ("MEDIA_ROOT", "POWERON_LLM_BASE_URL"):
        os.environ.pop(name, None)
    os.environ.update(
        POWERON_VAR_DIR=str(var_dir),
        DJANGO_SETTINGS_MODULE="poweron.settings",
        DATABASE_URL=url_of(database),
        REDIS_URL=REDIS,
        POWERON_RUNNER="worker",
        POWERON_WORKER_CONCURRENCY=str(max(sizes)),
        POWERON_MAX_RUNS_PER_USER="0",
        POWERON_MAX_ROUNDS_PER_HOUR="0",
        POWERON_QUEUE_POLL_SECONDS="0.2",
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
    logs: list[Path] = []
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

        def start(role: list[str], name: str) -> subprocess.Popen:
            logs.append(var_dir / f"{name}.log")
            with logs[-1].open("w") as output:
                child = subprocess.Popen(
                    [*me, *role], stdout=output, stderr=subprocess.STDOUT, cwd=ROOT
                )
            children.append(child)
            return child

        worker = start(["--serve-worker"], "worker")
        wait_for(lambda: "Worker ready" in logs[-1].read_text(), worker, logs[-1], "the worker")
        ports = []
        for index in range(max(setups)):
            port = free_port()
            app = start(["--serve-app", str(port)], f"daphne-{index}")
            wait_for(lambda port=port: listening(port), app, logs[-1], "Daphne")
            ports.append(port)
        rows = asyncio.run(measure({d: ports[:d] for d in setups}, sizes, "bench"))
        report(rows)
        for log in logs:
            if "Traceback" in (text := log.read_text()):
                print(f"\n{log.name} logged errors; its end:\n{text[-2000:]}")
    finally:
        for child in reversed(children):
            stop(child)
        drop_database(database)
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
