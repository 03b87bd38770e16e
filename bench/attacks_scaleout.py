"""Issue 31's attacks on the scale-out path: PostgreSQL, Redis, two Daphnes and a worker.

Starts, on a fresh PostgreSQL database (127.0.0.1:5432, user postgres) and Redis database
14 (127.0.0.1:6379, reached through a loopback TCP proxy the script can cut), two Daphnes
with POWERON_RUNNER=worker and one `run_workers` process, all with a fake model server
answering as the demo model does (hostile on demand; `scaleout_cluster.py`); then tries each
attack and prints a line per attack: held or NOT HELD, with its figure, and a table. Loopback
only; never asserts.

    .venv/bin/python bench/attacks_scaleout.py [--keep-logs DIR] [--only abcdefg]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from bench.replay_load import SEED, logins  # noqa: E402
from bench.scaleout_cluster import (  # noqa: E402
    ADMIN,
    COMMANDS,
    HOSTILE_BYTES,
    MODE,
    REDIS,
    REDIS_DB,
    REPLY_BYTES,
    RESULTS,
    ROUNDS,
    UPLOADS,
    Cluster,
    UserSession,
    events_of,
    model_reply,
    peak_kb,
    report,
    stop_all,
)
from bench.stats import quantile  # noqa: E402
from tests.hardening.attacks import (  # noqa: E402
    COUNT_ROWS,
    parallel_sends,
    parallel_uploads,
    upload,
)
from tests.live import is_final  # noqa: E402
from tests.support.apps import PASSWORD, AppProcesses, app_env  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402
from tests.support.sockets import connect  # noqa: E402
from tests.support.tcp_proxy import TcpProxy  # noqa: E402

# --- the attacks ------------------------------------------------------------------------------


def uploads(cluster: Cluster) -> None:
    session = UserSession(cluster.base(0), "alice")
    workflows = session.workflows(8)
    bases = [cluster.base(0), cluster.base(1)]
    statuses = parallel_uploads(session, bases, workflows, files=60)
    stored = int(cluster.shell(COUNT_ROWS).splitlines()[-1].split()[0])
    figure = f"{stored} files stored of 480 sent (limit {UPLOADS}); statuses {sorted(statuses)}"
    report("(a) 8x60-file uploads, 2 Daphnes", stored <= UPLOADS, figure)


async def sends(cluster: Cluster) -> None:
    session = UserSession(cluster.base(0), "bob")
    workflows = session.workflows(8)
    urls = [cluster.ws(index, workflow) for index, workflow in enumerate(workflows)]
    heard = await parallel_sends(session, urls, "Hello")
    started = heard.count("started")
    figure = f"{started} rounds started of 8 sent (limit {ROUNDS}/hour)"
    report("(b) 8 parallel sends, 2 Daphnes", started <= ROUNDS, figure)


async def command_flood(cluster: Cluster) -> None:
    session = UserSession(cluster.base(0), "carol")
    workflows = session.workflows(4)
    answers = cluster.shell(
        "from workflows import services\nfrom workflows.models import ChatWorkflow\n"
        f"for w in ChatWorkflow.objects.filter(pk__in={workflows}).order_by('pk'):\n"
        "    print(services.message_create(workflow=w, role='assistant', content='42', round=1).pk)"
    ).split()
    answers = [word for word in answers if word.isdigit()]  # the shell may say more
    before = events_of(cluster, workflows)
    headers = {"Cookie": session.cookie_header}

    async def flood(index: int) -> None:
        workflow, answer = workflows[index % 4], int(answers[index % 4])
        url = cluster.ws(index, workflow)
        async with connect(url, additional_headers=headers, ping_interval=None) as ws:
            for n in range(150):
                command = (
                    {"action": "feedback", "message": answer, "rating": 1 - 2 * (n % 2)}
                    if n % 2
                    else {"action": "steer", "text": f"note {n}"}
                )
                await ws.send(json.dumps(command))
                if n % 10 == 0:
                    await asyncio.sleep(0.05)  # within the socket's own rate, some of it
            await asyncio.sleep(2)

    def rename(index: int) -> int:
        with session.client(cluster.base(index)) as client:
            answer = client.post(
                f"/workflows/{workflows[index % 4]}/rename/",
                data={"title": f"Renamed {index}"},
                headers={"X-CSRFToken": session.cookies["csrftoken"], "HX-Request": "true"},
            )
        return answer.status_code

    started = time.monotonic()
    with ThreadPoolExecutor(20) as pool:
        renames = pool.map(rename, range(60))
        await asyncio.gather(*(flood(index) for index in range(8)))
        list(renames)
    took = time.monotonic() - started
    stored = events_of(cluster, workflows) - before
    figure = f"{stored} events stored from 1,260 commands in {took:.0f} s (limit {COMMANDS}/min)"
    report("(c) command flood, 8 sockets + HTTP", stored <= COMMANDS, figure)


def replay(cluster: Cluster, events: int = 5000, sockets: int = 20) -> None:
    cluster.shell(
        "from django.contrib.auth.models import User\n"
        f"User.objects.create_user('dave', password='{PASSWORD}')"
    )
    seed = SEED.replace('username="alice"', 'username="dave"').replace("{events}", str(events))
    workflow = int(cluster.shell(seed).split()[-1])
    session = UserSession(cluster.base(0), "dave")
    cookie = f"sessionid={session.cookies['sessionid']}"
    idle = logins(cluster.base(1), count=50)
    me = [sys.executable, str(ROOT / "bench" / "replay_load.py"), "--serve-load"]
    loads = [
        subprocess.Popen(
            [*me, cluster.ws(index, workflow, ""), cookie, str(events), str(sockets // 2)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for index in range(2)
    ]
    loaded = logins(cluster.base(1), until=loads[0])
    loaded += logins(cluster.base(0), until=loads[1])
    reads = [r for load in loads for r in json.loads(load.communicate()[0].splitlines()[-1])]
    median, p95 = quantile(loaded, 0.5), quantile(loaded, 0.95)
    figure = (
        f"GET /login/ ms median/p95: idle {quantile(idle, 0.5):.0f}/{quantile(idle, 0.95):.0f}, "
        f"under load {median:.0f}/{p95:.0f} (n={len(loaded)}, max {max(loaded):.0f}); "
        f"socket read {events} events in median {quantile(reads, 0.5):.0f} s"
    )
    report(f"(d) {sockets} sockets replay {events} events", p95 < 2000, figure)


async def run_round(cluster: Cluster, session: UserSession, workflow: int, text: str) -> dict:
    """Send `text` over a socket on Daphne one, wait for the run's final status."""
    headers = {"Cookie": session.cookie_header}
    async with connect(
        cluster.ws(0, workflow), additional_headers=headers, ping_interval=None, max_size=None
    ) as ws:
        await ws.send(json.dumps({"action": "send", "text": text}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 600))
            if is_final(event):
                return event


async def hostile_model(cluster: Cluster) -> None:
    session = UserSession(cluster.base(0), "erin")
    (workflow,) = session.workflows(1)
    upload(session, cluster.base(0), workflow, 1)  # a note for the demo model to read
    pids = {"worker": cluster.worker.pid} | {
        f"daphne {n}": process.pid for n, process in enumerate(cluster.app.processes[:2], 1)
    }
    before = {name: peak_kb(pid) for name, pid in pids.items()}
    MODE["hostile"] = True
    try:
        final = await run_round(cluster, session, workflow, "Summarise a note in a few words")
    finally:
        MODE["hostile"] = False
    after = {name: peak_kb(pid) for name, pid in pids.items()}
    biggest = (
        cluster.shell(
            "from django.db.models.functions import Length\nfrom workflows.models import "
            "ChatMessage, WorkflowEvent\n"
            f"m = ChatMessage.objects.filter(workflow_id={workflow}).annotate(n=Length('content'))"
            ".order_by('-n').first()\n"
            f"print(m.n if m else 0, WorkflowEvent.objects.filter(workflow_id={workflow}).count())"
        )
        .splitlines()[-1]
        .split()
    )
    peaks = ", ".join(f"{n} {before[n] // 1024}->{after[n] // 1024} MB" for n in pids)
    figure = (
        f"model streamed {HOSTILE_BYTES // 2**20} MB per text reply; round "
        f"{final['payload']['status']}; longest message {int(biggest[0]):,} chars "
        f"(the cap {REPLY_BYTES:,} bytes, and the host's notes); {biggest[1]} events; "
        f"peak RSS {peaks}"
    )
    held = int(biggest[0]) <= REPLY_BYTES + 1024  # the cap, and the host's notes under it
    report("(e) hostile model past the reply cap", held, figure)


async def reassigned(cluster: Cluster) -> None:
    session = UserSession(cluster.base(0), "frank")
    workflows = session.workflows(2)
    headers = {"Cookie": session.cookie_header}
    codes = []
    for index, (workflow, broadcast) in enumerate(zip(workflows, (True, False), strict=True)):
        async with connect(
            cluster.ws(index, workflow), additional_headers=headers, ping_interval=None
        ) as ws:
            await asyncio.sleep(0.5)
            code = (
                "from django.contrib.auth.models import User\nfrom asgiref.sync import "
                "async_to_sync\nfrom workflows.events import broadcast\nfrom workflows.models "
                "import ChatWorkflow\n"
                "grace, _ = User.objects.get_or_create(username='grace')\n"
                f"ChatWorkflow.objects.filter(pk={workflow}).update(owner=grace)\n"
            )
            if broadcast:  # admin's way; without it, the socket's next delivery checks
                code += f"async_to_sync(broadcast.reassigned)({workflow}, grace.pk)\n"
            else:
                code += (
                    "from workflows.events.log import NewEvent, events_append\n"
                    "from workflows.engine.records.events import StatusEvent\n"
                    "import time; time.sleep(1.5)\n"
                    f"s = events_append(workflow_id={workflow}, events=[NewEvent(StatusEvent("
                    "round=1, code='info', reason='for grace only'))])\n"
                    "async_to_sync(broadcast.broadcast_many)(s)\n"
                )
            cluster.shell(code)
            got = []
            try:
                while True:
                    got.append(json.loads(await asyncio.wait_for(ws.recv(), 20)))
            except Exception:  # noqa: BLE001 - closed (its code below) or silent
                pass
            leaked = [e for e in got if "grace" in json.dumps(e)]
            codes.append((ws.close_code, len(leaked)))
    held = all(code == 4404 and not leaked for code, leaked in codes)
    figure = (
        f"ORM + reassigned message: close {codes[0][0]}; ORM only, then an event: close "
        f"{codes[1][0]}, new owner's events received {codes[1][1]}"
    )
    report("(f) workflow reassigned, socket open", held, figure)


async def redis_cut(cluster: Cluster, proxy: TcpProxy, viewers: int = 10) -> None:
    session = UserSession(cluster.base(0), "heidi")
    (workflow,) = session.workflows(1)
    upload(session, cluster.base(1), workflow, 1)
    headers = {"Cookie": session.cookie_header}
    logs = [log.read_text(errors="replace") for log in cluster.app.logs]
    sockets = [
        await connect(
            cluster.ws(index, workflow),
            additional_headers=headers,
            ping_interval=None,
            max_size=None,
        ).__aenter__()  # fmt: skip
        for index in range(viewers)
    ]

    async def watch(ws: Any) -> list[tuple[int, float, str]]:
        """(seq, arrival, final status or "") of each stored event, to the final status."""
        seqs = []
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 120))
            final = event["payload"]["status"] if is_final(event) else ""
            if event["seq"] is not None:
                seqs.append((event["seq"], time.monotonic(), final))
            if final:
                return seqs

    MODE["slow"] = True
    try:
        watching = [asyncio.create_task(watch(ws)) for ws in sockets]
        await sockets[0].send(json.dumps({"action": "send", "text": "Summarise a note"}))
        await asyncio.sleep(3)
        proxy.cut()
        cut_at = time.monotonic()
        await asyncio.sleep(3)
        proxy.restore()
        restored_at = time.monotonic()
        arrivals = await asyncio.gather(*watching)
    finally:
        MODE["slow"] = False
        for ws in sockets:
            await ws.close()
    await asyncio.sleep(2)
    new = [
        log.read_text(errors="replace")[len(old) :]
        for log, old in zip(cluster.app.logs, logs, strict=True)
    ]
    warnings = [text.count(" WARNING ") for text in new]
    tracebacks = [text.count("Traceback") for text in new]
    seen = [[seq for seq, _, _ in each] for each in arrivals]
    whole = all(s == list(range(1, len(s) + 1)) for s in seen)
    same = len({tuple(s) for s in seen}) == 1
    during = sum(cut_at <= at < restored_at for _, at, _ in arrivals[0])
    after = sum(at >= restored_at for _, at, _ in arrivals[0])
    status = arrivals[0][-1][2]
    figure = (
        f"{viewers} viewers (half per Daphne), a run of {len(seen[0])} events ({status}; "
        f"{during} of them read during the cut, {after} after it): each once in order: "
        f"{whole and same}; warnings (daphne 1, daphne 2, worker) {warnings}, "
        f"tracebacks {tracebacks}"
    )
    spanned = after > 0 and status == "completed"  # the run went on across the cut
    held = whole and same and spanned and not sum(tracebacks)
    report("(g) Redis cut 3 s during a run", held, figure)


# --- the run ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep-logs", type=Path, help="copy the processes' logs here")
    parser.add_argument("--only", default="abcdefg", help="the attacks to try, e.g. eg")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    name = f"poweron_attacks_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    directory = Path(tempfile.mkdtemp(prefix="poweron-attacks-"))
    app = None
    with FakeOpenAIServer([model_reply] * 1_000_000) as model, TcpProxy(REDIS) as proxy:
        try:
            env = app_env(
                directory,
                model.url,
                DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{name}",
                REDIS_URL=f"redis://127.0.0.1:{proxy.port}/{REDIS_DB}",
                SECRET_KEY="attacks-scale-out-key-" + "x" * 40,
                POWERON_RUNNER="worker",
                POWERON_MAX_UPLOADS_PER_HOUR=str(UPLOADS),
                POWERON_MAX_ROUNDS_PER_HOUR=str(ROUNDS),
                POWERON_COMMANDS_PER_MINUTE=str(COMMANDS),
                POWERON_LLM_MAX_REPLY_BYTES=str(REPLY_BYTES),
                POWERON_MAX_RUNS_PER_USER="0",
                POWERON_CATCH_UP_SECONDS="1",
            )
            app = AppProcesses(env, directory)
            users = ", ".join(f"'{u}'" for u in ("bob", "carol", "erin", "frank", "heidi"))
            cluster = Cluster(app)
            cluster.shell(
                "from django.contrib.auth.models import User\n"
                f"for u in [{users}]: User.objects.create_user(u, password='{PASSWORD}')"
            )
            print(f"two Daphnes :{cluster.one} :{cluster.two}, worker pid {cluster.worker.pid}")
            attacks = {
                "a": lambda: uploads(cluster),
                "b": lambda: asyncio.run(sends(cluster)),
                "c": lambda: asyncio.run(command_flood(cluster)),
                "d": lambda: replay(cluster),
                "e": lambda: asyncio.run(hostile_model(cluster)),
                "f": lambda: asyncio.run(reassigned(cluster)),
                "g": lambda: asyncio.run(redis_cut(cluster, proxy)),
            }
            for letter in args.only:
                attacks[letter]()
        finally:
            if app is not None:
                stop_all(app, args.keep_logs)
            with psycopg.connect(ADMIN, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            shutil.rmtree(directory, ignore_errors=True)
    print("\n| attack | result | figure |\n|---|---|---|")
    for attack, held, figure in RESULTS:
        print(f"| {attack} | {'held' if held else 'NOT HELD'} | {figure} |")


if __name__ == "__main__":
    main()
