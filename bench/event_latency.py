"""Live delivery under load: N concurrent runs, 3 viewers each, 30% of them reconnecting,
with the rounds in a worker beside one or two Daphne processes, and inline in one Daphne.

On 127.0.0.1: PostgreSQL (a temporary database) and Redis (database 13, flushed), the fake
model server answering with the demo model's policy (0.15 s per call, the answer streamed a
word per 10 ms), and this script's `websockets` clients. Two topologies, one after the other:
`worker`, the production one, with one `run_workers` process running every round and D
Daphne processes serving the viewers (viewer i of a run on Daphne i mod D); and `inline`,
the embedded default (`make run`), with the rounds running in the one Daphne that serves
the viewers (POWERON_RUNNER=inline, no worker). Each run is a two-action React round
(extract, report) over one uploaded note. For each stored event, latency = the client's
receive time - the time the process that stored it committed it (that process wraps
`recording.record` and adds the time to the event's JSON; app code unchanged), and the
part of it spent in that process before the event was handed to the channel layer. Prints
p50/p95/p99, stored events/s, the answer text delivered live, the most connections the
app's database had open, and what must be 0: gaps, duplicates, viewers that never saw the
final status, answers not delivered whole. Never asserts.

    .venv/bin/python bench/event_latency.py [--sizes 10,25,50] [--daphnes 1,2]
        [--topologies worker,inline] [--quick]
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
    connections = Connections()
    sampling = asyncio.create_task(connections.sample())
    started = time.time()
    start.set()
    await asyncio.gather(*tasks)
    sampling.cancel()
    latencies, replays, to_send, stored_seen = [], [], [], set()
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
                live_event = viewer.live(event["committedAt"])
                (latencies if live_event else replays).append(waited)
                if live_event and "sentAt" in event:
                    to_send.append((event["sentAt"] - event["committedAt"]) * 1000)
                stored_seen.add((event["workflow"], event["seq"]))
    finished = max((v.received[-1][0] for v in viewers if v.received), default=started)
    completed = sum(
        v.finished and v.received[-1][1]["payload"]["status"] == "completed" for v in viewers
    )
    return {
        "latencies": latencies, "replays": replays, "to_send": to_send,
        "stored": len(stored_seen), "seconds": finished - started,
        "gaps": gaps, "duplicates": duplicates, "unfinished": unfinished,
        "incomplete": incomplete, "completed": completed, "viewers": len(viewers),
        "reconnecting": sum(v.reconnect for v in viewers),
        "unplanned": sum(v.reconnects for v in viewers),
        "live": live_chars / answer_chars if answer_chars else 0.0,
        "connections": connections.most,
    }  # fmt: skip


class Connections:
    """The most connections the app's database had open while a row ran (every process's)."""

    def __init__(self) -> None:
        self.most = 0

    async def sample(self) -> None:
        import psycopg

        from bench.pgtemp import PG_ADMIN

        name = os.environ["DATABASE_URL"].rsplit("/", 1)[1]
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
        with psycopg.connect(PG_ADMIN, autocommit=True) as connection:
            while True:
                (count,) = (await asyncio.to_thread(connection.execute, query, [name])).fetchone()
                self.most = max(self.most, count)
                await asyncio.sleep(0.25)


async def login(owner_name: str) -> tuple[Any, str]:
    """The bench's user and its session cookie."""
    from asgiref.sync import sync_to_async
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    owner, _ = await get_user_model().objects.aget_or_create(username=owner_name)

    def signed_in() -> str:
        client = Client()
        client.force_login(owner)
        return (
            f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        )

    return owner, await sync_to_async(signed_in)()


async def measure(setups: dict[str, list[int]], sizes: list[int], owner_name: str) -> list:
    """Every row of the topology now running: per setup (its label and Daphne ports), a
    warm-up (imports, first connections), then one row per size."""
    owner, cookie = await login(owner_name)
    rows = []
    for label, ports in setups.items():
        await concurrent_runs(ports, cookie, owner, 2)
        for size in sizes:
            rows.append((label, size, await concurrent_runs(ports, cookie, owner, size)))
    return rows


def report(rows: list) -> None:
    print(
        "live delivery under load: PostgreSQL + Redis on 127.0.0.1, fake model (demo policy, "
        "0.15 s per call); worker D: one run_workers process and D Daphnes for the viewers; "
        "inline: the rounds in the one Daphne that serves the viewers"
    )
    print(
        f"each row: N concurrent two-action rounds, {VIEWERS} viewers each, about "
        f"{RECONNECTING:.0%} dropping and reconnecting mid-run; latency = receive - commit"
    )
    print()
    print(
        f"{'setup':>9}{'N':>4}{'runs ok':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}"
        f"{'to send p95':>12}{'replay p50':>11}{'events/s':>10}"
        f"{'live text':>11}{'db conns':>9}{'gaps':>6}{'dups':>6}{'unfinished':>11}"
        f"{'not whole':>10}{'re-conn':>8}"
    )
    for label, size, r in rows:
        lat = r["latencies"]
        runs_ok = f"{r['completed'] // VIEWERS}/{size}"
        p50, p95, p99 = (quantile(lat, q) for q in (0.5, 0.95, 0.99))
        print(
            f"{label:>9}{size:>4}{runs_ok:>9}{p50:>9.0f}{p95:>9.0f}{p99:>9.0f}"
            f"{max(lat, default=0):>9.0f}{quantile(r['to_send'], 0.95):>12.0f}"
            f"{f'{quantile(replays, 0.5):.0f}' if (replays := r['replays']) else '-':>11}"
            f"{r['stored'] / r['seconds']:>10.0f}{r['live']:>11.1%}{r['connections']:>9}"
            f"{r['gaps']:>6}{r['duplicates']:>6}{r['unfinished']:>11}{r['incomplete']:>10}"
            f"{r['unplanned']:>8}"
        )
    print(
        "\np50/p95/p99/max: events committed while the viewer was connected (inline, also those "
        "a connected viewer read back from the database); to send p95: of those, commit -> "
        "handed to the channel layer, in the process that stored them; replay p50: events "
        "committed while a reconnecting viewer was away (their wait includes the time away)"
        "\nlive text: share of each answer that reached viewers who stayed connected in live "
        "frames (the rest came from the stored text); db conns: the most connections open to "
        "the app's database (every process, DBOS's included); gaps, dups, unfinished and not "
        "whole count viewers and must be 0\nre-conn: reconnections nobody planned (a socket "
        "closed or refused before the final status)"
    )


class Topology:
    """The processes of one topology, started and stopped by this script."""

    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.children: list[subprocess.Popen] = []
        self.logs: list[Path] = []

    def start(self, role: list[str], name: str, **env: str) -> subprocess.Popen:
        me = [sys.executable, str(Path(__file__).resolve())]
        self.logs.append(self.var_dir / f"{name}.log")
        with self.logs[-1].open("w") as output:
            child = subprocess.Popen(
                [*me, *role],
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
                env={**os.environ, **env},
            )
        self.children.append(child)
        return child

    def daphne(self, name: str, **env: str) -> int:
        """A Daphne serving the app; its port once it listens."""
        port = free_port()
        app = self.start(["--serve-app", str(port)], name, **env)
        wait_for(lambda: listening(port), app, self.logs[-1], "Daphne")
        if env.get("POWERON_RUNNER") == "inline":  # rounds start only once DBOS is ready
            wait_for(lambda: "DBOS launched" in self.logs[-1].read_text(), app, self.logs[-1],
                     "DBOS in Daphne")  # fmt: skip
        return port

    def stop(self) -> None:
        """Stop every process, last started first; say which logged errors."""
        for child in reversed(self.children):
            stop(child)
        for log in self.logs:
            if "Traceback" in (text := log.read_text()):
                first = text.index("Traceback")
                print(f"\n{log.name} logged errors; the first:\n{text[first : first + 3000]}")


def run_topology(kind: str, daphnes: list[int], sizes: list[int], var_dir: Path) -> list:
    """Start one topology, measure every row of it, stop it."""
    processes = Topology(var_dir)
    try:
        if kind == "inline":  # the embedded default, its queue polled as `make run` polls it
            port = processes.daphne(
                "daphne-inline", POWERON_RUNNER="inline", POWERON_EXECUTOR_ID="bench-inline",
                POWERON_QUEUE_POLL_SECONDS="1.0", LOG_LEVEL="INFO",
            )  # fmt: skip
            return asyncio.run(measure({"inline": [port]}, sizes, "bench"))
        worker = processes.start(["--serve-worker"], "worker")
        wait_for(lambda: "Worker ready" in processes.logs[-1].read_text(), worker,
                 processes.logs[-1], "the worker")  # fmt: skip
        ports = [processes.daphne(f"daphne-{index}") for index in range(max(daphnes))]
        setups = {f"worker {d}": ports[:d] for d in daphnes}
        return asyncio.run(measure(setups, sizes, "bench"))
    finally:
        processes.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,25,50", help="concurrent runs per row")
    parser.add_argument("--daphnes", default="1,2", help="Daphne processes per worker setup")
    parser.add_argument("--topologies", default="worker,inline", help="worker, inline or both")
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
    daphnes = [1] if args.quick else [int(n) for n in args.daphnes.split(",")]
    topologies = [kind.strip() for kind in args.topologies.split(",")]
    if unknown := set(topologies) - {"worker", "inline"}:
        parser.error(f"unknown topologies: {', '.join(sorted(unknown))}")

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
    model = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve-model"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert model.stdout is not None
        os.environ.update(
            POWERON_LLM_BASE_URL=model.stdout.readline().strip(),
            POWERON_LLM_API_KEY="sk-bench",
            POWERON_LLM_MODEL="fake-model",
        )
        rows = []
        for kind in topologies:
            rows += run_topology(kind, daphnes, sizes, var_dir)
        report(rows)
    finally:
        stop(model)
        drop_database(database)
        shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
