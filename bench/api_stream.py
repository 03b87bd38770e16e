"""The HTTP API's event stream: send → first SSE event, and the events/s one Daphne streams
to 100 SSE clients.

The `make run` shape on 127.0.0.1, as bench/first_event.py: one Daphne (SQLite in WAL mode
in a temporary directory, the in-memory channel layer, rounds run inline) with each event's
commit time stamped into its JSON (bench/load_processes.py; app code unchanged), the tests'
fake model server in a process of its own, and httpx clients sending a personal API token
made on the tokens page. Each client reads `GET /api/v1/workflows/{id}/events/stream` as
it arrives and keeps each event's bytes; they are parsed after the measurement.

(a) send → first event: one program follows a workflow's stream and sends chat messages
    (`POST /messages`) one after another, each `--pause` s after the last round's final
    status (the model answers at once, bench/first_event.py's policy). Per send, the ms from
    just before the POST to its 202, to the first SSE event (the user's message, which must
    come first) and to the final status.
(b) fan-out, live: 100 SSE clients follow W workflows (100/W each, `?until=final`), then a
    two-action React round is sent to each of the W at once (the demo model's policy:
    0.15 s a call, the answer streamed a word per 10 ms). Per row: events delivered to all
    clients per second (stored events and the answer's live frames), stored events/s, the
    lag receive - commit of stored events (p50/p99/max), and what must be 0: gaps,
    duplicates, clients that never saw the final status.
    fan-out, catch-up: 100 clients open the stream at once from seq 0 of a workflow of
    chat rounds with at least `--catch-up` stored events and read it whole: events/s from
    the database.

Prints medians and p99s; never asserts.

    .venv/bin/python bench/api_stream.py [--sends 100] [--clients 100] [--workflows 1,10]
        [--repeats 3] [--pause 0.2] [--catch-up 200] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.first_event import CHAT, NOTES, SUMMARISE, policy  # noqa: E402
from bench.load_processes import demo_answer, serve_app  # noqa: E402
from bench.stats import quantile  # noqa: E402

FINAL = {"completed", "failed", "stopped"}
TIMEOUT = 240.0


# --- the model server (a child process) ---------------------------------------------------------


def answer(body: dict[str, Any]) -> Any:
    """A round that summarises the notes gets the demo model (a little slow, its answer
    streamed word by word); a chat message is answered at once, without a task."""
    text = "\n".join(str(message.get("content")) for message in body["messages"])
    return demo_answer(body) if SUMMARISE in text else policy(body)


def serve_model() -> None:
    """Child: the fake model server, warmed up; prints its URL, serves until stdin closes."""
    import httpx

    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer([answer] * 1_000_000) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": CHAT}]}
        for stream in (False, True):
            httpx.post(f"{server.url}/chat/completions", json={**body, "stream": stream})
        print(server.url, flush=True)
        sys.stdin.read()


# --- the clients --------------------------------------------------------------------------------


class Reader:
    """One SSE client of a workflow's stream: each event as (receive time, id, type, data
    bytes), parsed only afterwards, so the client spends little while it reads."""

    def __init__(self, client: Any, workflow_id: int, after: int, **params: Any) -> None:
        self.client = client
        self.path = f"/api/v1/workflows/{workflow_id}/events/stream"
        self.params = {"after": after, **params}
        self.events: list[tuple[float, bytes]] = []
        self.opened = asyncio.Event()
        self.queue: asyncio.Queue[tuple[float, str | None, str, bytes]] | None = None

    async def read(self, *, upto: int | None = None) -> None:
        """Read until the stream ends (or up to the event with seq `upto`)."""
        async with self.client.stream("GET", self.path, params=self.params) as response:
            assert response.status_code == 200, response.status_code
            self.opened.set()
            pending = b""
            async for chunk in response.aiter_raw():
                now = time.time()
                *blocks, pending = (pending + chunk).split(b"\n\n")
                for block in blocks:
                    if block.startswith((b":", b"retry:")):
                        continue  # a heartbeat, the reconnection delay
                    self.events.append((now, block))
                    if self.queue is not None:
                        self.queue.put_nowait((now, *parse(block)))
                    seq = parse(block)[0] if upto is not None else None
                    if seq is not None and upto is not None and int(seq) >= upto:
                        return

    def parsed(self) -> list[tuple[float, str | None, str, bytes]]:
        return [(at, *parse(block)) for at, block in self.events]


def parse(block: bytes) -> tuple[str | None, str, bytes]:
    """An SSE event's id (None for a live frame), type and data."""
    fields = dict(line.split(b": ", 1) for line in block.split(b"\n"))
    seq = fields.get(b"id")
    return (seq.decode() if seq else None), fields[b"event"].decode(), fields[b"data"]


def is_final(kind: str, data: bytes) -> bool:
    return kind == "run" and json.loads(data)["payload"]["status"] in FINAL


async def new_workflow(client: Any, title: str, *, note: bool = False) -> tuple[int, int | None]:
    """A workflow made through the API; with `note`, an upload for its next message."""
    made = await client.post("/api/v1/workflows", json={"title": title})
    workflow_id, upload = made.json()["id"], None
    if note:
        files = {"files": ("notes.md", NOTES, "text/markdown")}
        sent = await client.post(f"/api/v1/workflows/{workflow_id}/uploads", files=files)
        upload = sent.json()["documents"][0]["id"]
    return workflow_id, upload


async def last_seq(client: Any, workflow_id: int) -> int:
    return (await client.get(f"/api/v1/workflows/{workflow_id}/run")).json()["lastSeq"]


# --- (a) send → first event ---------------------------------------------------------------------


async def send_to_first_event(client: Any, sends: int, pause: float) -> tuple[int, list[dict]]:
    """The workflow and, per send after one unmeasured round, its ms to the 202, the first
    event and the final status, and whether the first event was the user's message."""
    workflow_id, _ = await new_workflow(client, "Send to first event")
    reader = Reader(client, workflow_id, await last_seq(client, workflow_id))
    reader.queue = asyncio.Queue()
    reading = asyncio.create_task(reader.read())
    await reader.opened.wait()
    measured = []
    try:
        for index in range(sends + 1):
            await asyncio.sleep(pause)
            started = time.time()
            sent = await client.post(
                f"/api/v1/workflows/{workflow_id}/messages", json={"text": f"{CHAT} ({index})"}
            )
            accepted = time.time()
            assert sent.status_code == 202, sent.text
            times: dict[str, Any] = {"accepted": (accepted - started) * 1000}
            while True:
                at, seq, kind, data = await asyncio.wait_for(reader.queue.get(), 60)
                if seq is None:
                    continue
                if "first" not in times:
                    payload = json.loads(data)["payload"]
                    times["first"] = (at - started) * 1000
                    times["message"] = kind == "message" and payload["role"] == "user"
                if is_final(kind, data):
                    times["end"] = (at - started) * 1000
                    break
            if index:
                measured.append(times)
    finally:
        reading.cancel()
    return workflow_id, measured


# --- (b) fan-out --------------------------------------------------------------------------------


async def live_row(client: Any, clients: int, workflows: int) -> dict[str, Any]:
    """`clients` readers over `workflows` workflows, a round sent to each at once."""
    made = [await new_workflow(client, "Fan-out", note=True) for _ in range(workflows)]
    starts = {w: await last_seq(client, w) for w, _ in made}
    readers = [
        Reader(client, made[i % workflows][0], starts[made[i % workflows][0]], until="final")
        for i in range(clients)
    ]
    tasks = [asyncio.create_task(reader.read()) for reader in readers]
    await asyncio.wait_for(asyncio.gather(*(r.opened.wait() for r in readers)), 60)
    await asyncio.sleep(1.0)  # every stream has subscribed and replayed its (empty) past
    started = time.time()
    answers = await asyncio.gather(
        *(
            client.post(
                f"/api/v1/workflows/{w}/messages", json={"text": SUMMARISE, "documents": [u]}
            )
            for w, u in made
        )
    )
    assert all(a.status_code == 202 for a in answers), [a.text for a in answers]
    done, waiting = await asyncio.wait(tasks, timeout=TIMEOUT)
    for task in waiting:
        task.cancel()
    delivered = 0
    lag: list[float] = []
    stored: set[tuple[str, str]] = set()
    gaps = duplicates = unfinished = completed = 0
    finished = started
    for reader in readers:
        events = reader.parsed()
        delivered += len(events)
        seqs = [int(seq) for _, seq, _, _ in events if seq is not None]
        duplicates += len(seqs) - len(set(seqs))
        first = int(reader.params["after"]) + 1
        gaps += int(sorted(set(seqs)) != list(range(first, first + len(set(seqs)))))
        last = events[-1] if events else None
        final = last is not None and is_final(last[2], last[3])
        unfinished += not final
        completed += final and json.loads(last[3])["payload"]["status"] == "completed"
        for at, seq, _, data in events:
            finished = max(finished, at)
            if seq is None:
                continue
            stored.add((reader.path, seq))
            if (committed := json.loads(data).get("committedAt")) is not None:
                lag.append((at - committed) * 1000)
    seconds = finished - started
    return {
        "delivered": delivered / seconds, "stored": len(stored) / seconds, "seconds": seconds,
        "events": delivered, "lag": lag, "gaps": gaps, "duplicates": duplicates,
        "unfinished": unfinished, "completed": completed,
    }  # fmt: skip


async def stored_workflow(client: Any, least: int) -> int:
    """A workflow of chat rounds sent one after another until it has `least` stored events."""
    workflow_id, _ = await new_workflow(client, "Catch-up")
    while await last_seq(client, workflow_id) < least:
        path = f"/api/v1/workflows/{workflow_id}"
        assert (await client.post(f"{path}/messages", json={"text": CHAT})).status_code == 202
        while (await client.get(f"{path}/run")).json()["status"] not in FINAL:
            await asyncio.sleep(0.05)
    return workflow_id


async def catch_up_row(client: Any, clients: int, workflow_id: int) -> dict[str, Any]:
    """`clients` readers opening the stream at once from seq 0 and reading it to its end."""
    end = await last_seq(client, workflow_id)
    readers = [Reader(client, workflow_id, 0) for _ in range(clients)]
    started = time.time()
    await asyncio.wait_for(asyncio.gather(*(r.read(upto=end) for r in readers)), TIMEOUT)
    finished = max(r.events[-1][0] for r in readers)
    whole = sum(len(r.events) == end for r in readers)
    events = sum(len(r.events) for r in readers)
    return {"events": events, "seconds": finished - started, "per_client": end, "whole": whole}


async def measure(base: str, token: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    limits = httpx.Limits(max_connections=args.clients + 20, max_keepalive_connections=20)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=base, headers=headers, limits=limits, timeout=TIMEOUT, trust_env=False
    ) as client:
        _, sends = await send_to_first_event(client, args.sends, args.pause)
        await live_row(client, 10, 2)  # warm-up: the demo round's first documents, parsers
        live = {
            w: [await live_row(client, args.clients, w) for _ in range(args.repeats)]
            for w in args.workflows
        }
        stored = await stored_workflow(client, args.catch_up)
        catch_up = [await catch_up_row(client, args.clients, stored) for _ in range(args.repeats)]
    return {"sends": sends, "live": live, "catch_up": catch_up}


# --- the report ---------------------------------------------------------------------------------


def report(results: dict[str, Any], args: argparse.Namespace) -> None:
    sends = results["sends"]
    print(
        f"machine: {os.cpu_count()} cores, load average {results['load'][0]:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end (other work shares it)\n"
    )
    print(
        f"(a) send -> first SSE event: {len(sends)} chat messages sent one after another "
        f"through POST /messages ({args.pause} s after the last final status), one SSE client "
        "following the workflow; one Daphne (SQLite, in-memory layer, inline runs)"
    )
    print(f"{'from just before the POST to':<40}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for key, label in (
        ("accepted", "its 202"),
        ("first", "the first SSE event"),
        ("end", "the final status"),
    ):
        values = [each[key] for each in sends]
        print(
            f"{label:<40}{statistics.median(values):>9.1f}{quantile(values, 0.99):>9.1f}"
            f"{max(values):>9.1f}"
        )
    first_is_message = sum(each["message"] for each in sends)
    print(f"the first event was the user's message in {first_is_message}/{len(sends)} sends")
    print()
    print(
        f"(b) fan-out, live: {args.clients} SSE clients over W workflows, a two-action round "
        f"sent to each workflow at once (demo policy, 0.15 s a call); {args.repeats} "
        "repetitions, medians (lag pooled)"
    )
    print(
        f"{'W':>4}{'clients/W':>10}{'delivered/s':>13}{'stored/s':>10}{'seconds':>9}"
        f"{'lag p50':>9}{'lag p99':>9}{'lag max':>9}{'gaps':>6}{'dups':>6}{'unfinished':>11}"
        f"{'completed':>11}"
    )
    for workflows, rows in results["live"].items():
        lag = [value for row in rows for value in row["lag"]]
        completed = f"{sum(r['completed'] for r in rows)}/{args.clients * len(rows)}"
        print(
            f"{workflows:>4}{args.clients // workflows:>10}"
            f"{statistics.median(r['delivered'] for r in rows):>13.0f}"
            f"{statistics.median(r['stored'] for r in rows):>10.1f}"
            f"{statistics.median(r['seconds'] for r in rows):>9.2f}"
            f"{quantile(lag, 0.5):>9.0f}{quantile(lag, 0.99):>9.0f}{max(lag, default=0):>9.0f}"
            f"{sum(r['gaps'] for r in rows):>6}{sum(r['duplicates'] for r in rows):>6}"
            f"{sum(r['unfinished'] for r in rows):>11}"
            f"{completed:>11}"
        )
    rows = results["catch_up"]
    rates = [row["events"] / row["seconds"] for row in rows]
    print()
    print(
        f"(b) fan-out, catch-up: {args.clients} SSE clients open the stream at once from seq 0 "
        f"of a workflow of {rows[0]['per_client']} stored events (chat rounds) and read it whole"
    )
    print(
        f"events/s delivered: median {statistics.median(rates):.0f} (runs: "
        f"{', '.join(f'{rate:.0f}' for rate in rates)}); seconds to the last client's end: "
        f"median {statistics.median(row['seconds'] for row in rows):.2f}; clients that read "
        f"every event: {sum(row['whole'] for row in rows)}/{args.clients * len(rows)}"
    )
    print(
        "\ndelivered/s: every SSE event all clients received (stored events and the answer's "
        "live frames) over the seconds from the sends to the last client's final status; "
        "stored/s: distinct stored events; lag: receive - commit of stored events, in ms. "
        "The clients share the machine with the Daphne and the model server."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=100)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--workflows", default="1,10", help="workflows the clients follow")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between sends")
    parser.add_argument("--catch-up", type=int, default=200, help="stored events to read")
    parser.add_argument("--quick", action="store_true", help="20 sends, one repetition")
    parser.add_argument("--serve-model", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_model:
        return serve_model()
    if args.serve_app:
        return serve_app(args.serve_app)
    if args.quick:
        args.sends, args.repeats = 20, 1
    args.workflows = [int(n) for n in args.workflows.split(",")]

    import httpx

    from tests.api.live_app import alice_token
    from tests.support.apps import AppProcesses, app_env, free_port, wait_for_port

    directory = Path(tempfile.mkdtemp(prefix="poweron-api-stream-"))
    me = [sys.executable, str(Path(__file__).resolve())]
    model = subprocess.Popen(
        [*me, "--serve-model"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=ROOT,
    )  # fmt: skip
    apps = None
    try:
        assert model.stdout is not None
        env = app_env(
            directory,
            model.stdout.readline().strip(),
            LOG_LEVEL="WARNING",
            POWERON_MAX_ROUNDS_PER_HOUR="0",  # more sends than the hourly rates allow
            POWERON_MAX_UPLOADS_PER_HOUR="0",
            POWERON_MAX_RUNS_PER_USER="0",
            POWERON_API_REQUESTS_PER_MINUTE="0",
            POWERON_WORKER_CONCURRENCY=str(max(args.workflows) + 2),
        )
        os.environ.pop("MEDIA_ROOT", None)
        apps = AppProcesses(env, directory)
        port = free_port()
        wait_for_port(port, apps.start([*me, "--serve-app", str(port)]), timeout=60)
        base = f"http://127.0.0.1:{port}"
        httpx.get(f"{base}/login/", timeout=120, trust_env=False)  # the app's first request
        load = os.getloadavg()
        results = asyncio.run(measure(base, alice_token(base, ["read", "run"]), args))
        report({**results, "load": load}, args)
    finally:
        if apps is not None:
            for process in apps.processes:
                if process.poll() is None:
                    process.terminate()
                process.wait(timeout=30)
        assert model.stdin is not None
        model.stdin.close()
        model.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
