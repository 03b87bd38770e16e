"""`/login/` while sockets replay a long workflow: does a replay starve other requests?

One Daphne (the `make run` shape: SQLite in WAL mode in a temporary directory, the
in-memory channel layer) serving the code of `--root` (this checkout by default; another
release unpacked with `git archive <commit> | tar -x -C /tmp/old`, run with this
checkout's Python). A workflow of `--events` stored events (renames, ratings and steering
notes, as a user flooding commands wrote them) is made in the database; then `--sockets`
sockets open it at once from seq 0 in the page's HTML format and read it to its last event
(answering a paged replay's "more" as the page does), `--repeats` times, while one client
asks for `GET /login/` one request after another. The sockets run in a process of their own,
so their reading does not slow the client that measures.

Prints the median, p95 and max of `/login/` with no load and under the load, and how long
the sockets took to read the workflow; never asserts.

    .venv/bin/python bench/replay_load.py [--events 9000] [--sockets 20] [--repeats 3]
        [--root /tmp/old] [--env POWERON_REPLAY_PAGE=0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.stats import quantile  # noqa: E402

PASSWORD = "bench-password-31"
SEED = """
from workflows.events.contract import TitleEvent, FeedbackEvent
from workflows.engine.records.events import StatusEvent
from workflows.events.log import NewEvent, events_append
from workflows.models import ChatMessage, ChatWorkflow
from django.contrib.auth.models import User
owner = User.objects.get(username="alice")
workflow = ChatWorkflow.objects.create(owner=owner, title="Long")
answer = ChatMessage.objects.create(workflow=workflow, role="assistant", content="42", round=1)
kinds = [
    lambda n: TitleEvent(round=0, title=f"Renamed {n}"),
    lambda n: FeedbackEvent(round=1, messageId=answer.pk, rating=1 if n % 2 else -1,
                            comment=f"Rated {n}"),
    lambda n: StatusEvent(round=1, code="info", reason=f"Steering received: note {n}"),
]
for start in range(0, {events}, 500):
    batch = [NewEvent(kinds[n % 3](n)) for n in range(start, min({events}, start + 500))]
    events_append(workflow_id=workflow.pk, events=batch)
print(workflow.pk)
"""
SEQ = re.compile(r'id="event-meta"[^>]*? data-seq="(\d*)"')
MORE = re.compile(r'data-more="(\d+)"')


# --- the sockets (a child process) --------------------------------------------------------------


async def read_whole(url: str, cookie: str, last: int) -> float:
    """Open the workflow from seq 0 and read it to `last`; the seconds it took."""
    from tests.support.sockets import connect

    started = time.monotonic()
    headers = {"Cookie": cookie}
    async with connect(url, additional_headers=headers, max_size=None, ping_interval=None) as ws:
        seen = 0
        while seen < last:
            frame = str(await asyncio.wait_for(ws.recv(), 600))
            more = MORE.search(frame)
            if more:  # a paged replay: ask for the next page, as the page does
                await ws.send(json.dumps({"action": "resume", "after": int(more[1])}))
                continue
            seq = SEQ.search(frame)
            if seq and seq[1]:
                seen = max(seen, int(seq[1]))
    return time.monotonic() - started


def serve_load(url: str, cookie: str, last: int, sockets: int) -> None:
    """Child: `sockets` sockets read the workflow at once; prints each one's seconds."""

    async def run() -> list[float]:
        return await asyncio.gather(*(read_whole(url, cookie, last) for _ in range(sockets)))

    print(json.dumps(asyncio.run(run())), flush=True)


# --- the app ------------------------------------------------------------------------------------


def app_env(directory: Path, extra: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERON_", "OPENAI_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="poweron.settings",
        POWERON_VAR_DIR=str(directory / "var"),
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        LOG_LEVEL="WARNING",
        POWERON_COMMANDS_PER_MINUTE="0",
    )
    env.update(item.split("=", 1) for item in extra)
    return env


def manage(root: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=root, env=env, check=True,
        capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def sign_in(base: str) -> str:
    import httpx

    with httpx.Client(base_url=base, timeout=120, trust_env=False) as client:
        page = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token}
        assert client.post("/login/", data=data).status_code == 302
        return f"sessionid={client.cookies['sessionid']}"


def logins(base: str, *, count: int | None = None, until: subprocess.Popen | None = None):
    """Milliseconds of `GET /login/`, one after another: `count` of them, or until the
    process `until` ends."""
    import httpx

    times: list[float] = []
    with httpx.Client(base_url=base, timeout=600, trust_env=False) as client:
        while (count is not None and len(times) < count) or (
            until is not None and until.poll() is None
        ):
            started = time.perf_counter()
            assert client.get("/login/").status_code == 200
            times.append((time.perf_counter() - started) * 1000)
    return times


def row(name: str, times: list[float]) -> str:
    return (
        f"{name:<34}{len(times):>6}{quantile(times, 0.5):>10.0f}{quantile(times, 0.95):>10.0f}"
        f"{max(times, default=0):>10.0f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=9000)
    parser.add_argument("--sockets", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="the code the Daphne runs")
    parser.add_argument("--env", action="append", default=[], help="NAME=value for the app")
    parser.add_argument("--serve-load", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_load:
        url, cookie, last, sockets = args.serve_load
        return serve_load(url, cookie, int(last), int(sockets))

    from tests.support.apps import free_port, wait_for_port

    directory = Path(tempfile.mkdtemp(prefix="poweron-replay-load-"))
    root = args.root.resolve()
    env = app_env(directory, args.env)
    daphne = None
    try:
        manage(root, env, "migrate", "--noinput")
        manage(
            root, env, "createsuperuser", "--noinput", "--username", "alice", "--email", "a@x.org"
        )
        seeded = manage(root, env, "shell", "-c", SEED.replace("{events}", str(args.events)))
        workflow = int(seeded.split()[-1])
        port = free_port()
        log = (directory / "daphne.log").open("wb")
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
        daphne = subprocess.Popen(
            [*command, "poweron.asgi:application"], cwd=root, env=env, stdout=log, stderr=log
        )
        wait_for_port(port, daphne)
        base = f"http://127.0.0.1:{port}"
        cookie = sign_in(base)
        idle = logins(base, count=50)
        loaded: list[float] = []
        reads: list[float] = []
        url = f"ws://127.0.0.1:{port}/ws/workflows/{workflow}/"
        me = [sys.executable, str(Path(__file__).resolve())]
        for _ in range(args.repeats):
            load = subprocess.Popen(
                [*me, "--serve-load", url, cookie, str(args.events), str(args.sockets)],
                cwd=ROOT, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            loaded += logins(base, until=load)
            out, _ = load.communicate()
            assert load.returncode == 0, out
            reads += json.loads(out.strip().splitlines()[-1])
        print(
            f"{root} ({' '.join(args.env) or 'default settings'}); {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.1f}\n{args.sockets} sockets replaying "
            f"{args.events} events from seq 0 (HTML), {args.repeats} times\n"
        )
        print(f"{'GET /login/ (ms)':<34}{'n':>6}{'median':>10}{'p95':>10}{'max':>10}")
        print(row("no load", idle))
        print(row(f"while {args.sockets} sockets replay", loaded))
        print(
            f"\nseconds for a socket to read the whole workflow: median "
            f"{quantile(reads, 0.5):.1f}, max {max(reads):.1f}"
        )
    finally:
        if daphne is not None:
            daphne.terminate()
            daphne.wait(timeout=30)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
