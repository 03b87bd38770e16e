"""Send → first event: how soon a viewer sees its message after sending it, through the real
path, and how much slower the first round after a process start is than the second.

The `make run` shape on 127.0.0.1: one Daphne serving the ASGI app (SQLite in WAL mode in a
temporary directory, the in-memory channel layer, rounds run inline), the scripted localhost
model server of the tests answering at once (in a process of its own, warmed up first), and
a `websockets` client of a signed-in user, sending each message 0.2 s after the last round
ended, as a reader would (`--pause 0` sends into the tail of the last round). Each send is
timed from just before the command leaves the client to (1) the user's message arriving (it
must be the first event of the round), (2) the round's own first event and (3) its final
status. The latency rounds are chat rounds (the model plans no task and answers); the
first/second rounds extract an uploaded note with one action, in a Daphne started afresh
each time. Prints p50/p99 and one verdict line per goal; never asserts.

    .venv/bin/python bench/first_event.py [--sends 50] [--restarts 5] [--pause 0.2] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
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

from bench.stats import quantile  # noqa: E402

NOTES = b"# Quarterly notes\n\nRevenue grew 12 percent in the third quarter.\n"
CHAT = "Hello, what can you do?"
SUMMARISE = "Summarise my notes"


# --- the model server (a child process) ---------------------------------------------------------


def policy(body: dict[str, Any]) -> Any:
    """What the model answers, by what it is asked: a chat round plans no task; a round that
    summarises extracts the note its message carries and stops."""
    from tests.support.replies import params, review, select, stop, taskplan

    text = "\n".join(str(message.get("content")) for message in body["messages"])
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    uploads = re.findall(r"docList:(round\d+_upload)", text)
    if name == "TaskPlan":
        return taskplan(SUMMARISE) if SUMMARISE in text else {"overview": "chat", "tasks": []}
    if name == "ActionSelection":
        document = f"docList:{uploads[-1]}" if uploads else "docList:round1_upload"
        return select(
            "document.extract", requiredInputDocuments=[document], parametersSchema={"fields": []}
        )
    replies = {"ActionParameters": params(), "RefinementDecision": stop(), "TaskReview": review()}
    return replies.get(name, "The notes say revenue grew 12 percent.")


def serve_model() -> None:
    """Child: the fake model server, warmed up (its own first requests are not the app's to
    pay); prints its URL, serves until stdin closes."""
    import httpx

    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer([policy] * 1_000_000) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": CHAT}]}
        for stream in (False, True):
            httpx.post(f"{server.url}/chat/completions", json={**body, "stream": stream})
        print(server.url, flush=True)
        sys.stdin.read()


# --- the client -----------------------------------------------------------------------------------


class Viewer:
    """A signed-in socket on one workflow that sends messages and times what comes back."""

    def __init__(self, port: int, cookie: str, workflow_id: int) -> None:
        self.url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow_id}/?format=json"
        self.cookie = cookie
        self.socket: Any = None

    async def __aenter__(self) -> Viewer:
        from tests.support.sockets import connect

        self.socket = await connect(
            self.url, additional_headers={"Cookie": self.cookie},
            proxy=None,
        )  # fmt: skip
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.socket.close()

    async def send(self, text: str, documents: list[int]) -> dict[str, Any]:
        """Send a message; ms to the user's message, the round's first event and the end."""
        command = json.dumps({"action": "send", "text": text, "documents": documents})
        started = time.perf_counter()
        await self.socket.send(command)
        times: dict[str, Any] = {}
        while True:
            event = json.loads(await asyncio.wait_for(self.socket.recv(), 60))
            elapsed = (time.perf_counter() - started) * 1000
            if event["type"] == "notice":
                raise RuntimeError(f"the send was refused: {event['payload']['text']}")
            if event["seq"] is None:
                continue
            if "message" not in times:
                payload = event["payload"]
                times["message"] = elapsed
                times["first"] = event["type"] == "message" and payload.get("role") == "user"
            elif "round" not in times:
                times["round"] = elapsed
            if event["type"] == "run" and event["payload"]["status"] in ("completed", "failed"):
                times["end"], times["status"] = elapsed, event["payload"]["status"]
                return times


def upload(workflow_id: int) -> int:
    """A note uploaded to the workflow (for its next message), written by this process."""
    from workflows import services
    from workflows.models import ChatWorkflow

    workflow = ChatWorkflow.objects.get(pk=workflow_id)
    return services.document_upload(workflow=workflow, name="notes.md", data=NOTES).pk


async def first_and_second(apps: Any, restarts: int) -> list[tuple[float, float]]:
    """(first, second) round ms after each fresh start of Daphne."""
    from channels.db import database_sync_to_async

    from tests.support.apps import sign_in_and_create_workflow

    pairs = []
    for _ in range(restarts):
        port = apps.web()
        cookie, workflow_id = sign_in_and_create_workflow(port)
        rounds = []
        async with Viewer(port, cookie, workflow_id) as viewer:
            for _ in range(2):
                document = await database_sync_to_async(upload)(workflow_id)
                times = await viewer.send(SUMMARISE, [document])
                assert times["status"] == "completed", times
                rounds.append(times["end"])
        pairs.append((rounds[0], rounds[1]))
        process = apps.processes[-1]
        process.terminate()
        process.wait(timeout=30)
    return pairs


async def latencies(apps: Any, sends: int, pause: float) -> list[dict[str, Any]]:
    """Send `sends` chat messages one after another (after one unmeasured round), each
    `pause` seconds after the last round ended, as a reader would."""
    from tests.support.apps import sign_in_and_create_workflow

    port = apps.web()
    cookie, workflow_id = sign_in_and_create_workflow(port)
    measured = []
    async with Viewer(port, cookie, workflow_id) as viewer:
        for index in range(sends + 1):
            await asyncio.sleep(pause)
            times = await viewer.send(f"{CHAT} ({index})", [])
            if index:
                measured.append(times)
    return measured


def report(sends: list[dict[str, Any]], pairs: list[tuple[float, float]]) -> None:
    print(
        f"send → first event: {len(sends)} chat messages sent one after another to one Daphne "
        "(SQLite, in-memory layer, inline runs), the fake model answering at once"
    )
    print(f"{'from the send to':<40}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for key, label in (
        ("message", "the user's message (first event)"),
        ("round", "the round's first event"),
        ("end", "the final status"),
    ):
        values = [each[key] for each in sends]
        p50, p99 = statistics.median(values), quantile(values, 0.99)
        print(f"{label:<40}{p50:>9.1f}{p99:>9.1f}{max(values):>9.1f}")
    first_is_message = all(each["first"] for each in sends)
    print()
    print(f"first vs second round after a fresh Daphne start ({len(pairs)} starts; one action)")
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    ratios = [a / b for a, b in pairs]
    print(f"{'round':<40}{'median ms':>11}{'max ms':>9}")
    print(f"{'first after start':<40}{statistics.median(firsts):>11.1f}{max(firsts):>9.1f}")
    print(f"{'second':<40}{statistics.median(seconds):>11.1f}{max(seconds):>9.1f}")
    print(f"{'first / second (median of ratios)':<40}{statistics.median(ratios):>11.2f}")
    print()
    p99 = quantile([each["message"] for each in sends], 0.99)
    verdict(p99 < 50, f"send → first event p99 {p99:.1f} ms (goal < 50 ms)")
    ratio = statistics.median(ratios)
    verdict(ratio <= 1.2, f"first round after start {ratio:.2f}× the second (goal ≤ 1.2×)")
    verdict(first_is_message, "the user's message is the first event of every round")


def verdict(met: bool, text: str) -> None:
    print(f"{'MET    ' if met else 'MISSED '} {text}")


def main() -> None:
    if sys.argv[1:] == ["--model"]:
        serve_model()
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=50)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between sends")
    parser.add_argument("--quick", action="store_true", help="20 sends, 2 restarts")
    args = parser.parse_args()
    sends, restarts = (20, 2) if args.quick else (args.sends, args.restarts)
    directory = Path(tempfile.mkdtemp(prefix="poweron-first-event-"))
    model = subprocess.Popen(
        [sys.executable, __file__, "--model"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, cwd=ROOT,
    )  # fmt: skip
    apps = None
    try:
        assert model.stdout is not None
        from tests.support.apps import AppProcesses, app_env

        env = app_env(
            directory,
            model.stdout.readline().strip(),
            LOG_LEVEL="WARNING",
            POWERON_MAX_ROUNDS_PER_HOUR="0",  # more sends than the hourly rate allows
        )
        apps = AppProcesses(env, directory)
        os.environ.update(env)  # this process writes the uploads into the same database
        import django

        django.setup()
        pairs = asyncio.run(first_and_second(apps, restarts))
        measured = asyncio.run(latencies(apps, sends, args.pause))
        report(measured, pairs)
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
