"""The scale-out topology of bench/attacks_scaleout.py and what its attacks share: the fake
model (the demo model's answers, hostile or slow on demand), the two Daphnes and the worker,
a user signed in, a process's peak memory, a result line."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from bench.load_processes import SCHEMA_KINDS, demo_answer  # noqa: E402
from tests.hardening.attacks import Session  # noqa: E402
from tests.support.apps import PASSWORD, AppProcesses  # noqa: E402
from tests.support.fake_openai import FakeReply  # noqa: E402

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = ("127.0.0.1", 6379)
REDIS_DB = 14
UPLOADS, ROUNDS, COMMANDS, REPLY_BYTES = 100, 3, 20, 512 * 1024
HOSTILE_BYTES = 30 * 1024 * 1024
MODE = {"hostile": False, "slow": False}
"""What the fake model does now (read by its request threads)."""
RESULTS: list[tuple[str, bool, str]] = []
ANSWER = " ".join(f"word{n}" for n in range(60))


def model_reply(body: dict[str, Any]) -> Any:
    """The demo model's answer; a 30 MB streamed text while hostile; slower while slow."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    if MODE["hostile"] and schema not in SCHEMA_KINDS:
        word = "x" * 65_535 + " "
        return FakeReply(content=word * (HOSTILE_BYTES // len(word)))
    if schema not in SCHEMA_KINDS:  # an answer: the demo's needs facts a round may lack
        reply = FakeReply(content=ANSWER, delay=0.15, chunk_delay=0.01)
    else:
        reply = demo_answer(body)
    if MODE["slow"]:
        reply = dataclasses.replace(reply, delay=1.5, chunk_delay=0.05)
    return reply


def report(name: str, held: bool, figure: str) -> None:
    RESULTS.append((name, held, figure))
    print(f"{name:<40} {'held' if held else 'NOT HELD':<9} {figure}", flush=True)


class UserSession(Session):
    """`username` signed in (PASSWORD) on one process."""

    def __init__(self, base: str, username: str) -> None:
        import re

        self.base = base
        with httpx.Client(base_url=base, timeout=300) as client:
            login = client.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
            data = {"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token}
            assert client.post("/login/", data=data).status_code == 302
            client.get("/")
            self.cookies = dict(client.cookies)


class Cluster:
    """The processes and how to reach them."""

    def __init__(self, app: AppProcesses) -> None:
        self.app = app
        self.one = app.web()
        self.two = app.web()
        self.worker = app.worker(executor_id="attack-worker")

    def base(self, index: int) -> str:
        return f"http://127.0.0.1:{(self.one, self.two)[index % 2]}"

    def ws(self, index: int, workflow: int, query: str = "format=json") -> str:
        port = (self.one, self.two)[index % 2]
        return f"ws://127.0.0.1:{port}/ws/workflows/{workflow}/" + (f"?{query}" if query else "")

    def shell(self, code: str) -> str:
        command = [sys.executable, "manage.py", "shell", "-c", code]
        done = subprocess.run(
            command, cwd=ROOT, env=self.app.env, capture_output=True, text=True, timeout=300
        )
        if done.returncode:
            raise RuntimeError(done.stderr[-3000:])
        return done.stdout.strip()


def peak_kb(pid: int) -> int:
    """VmHWM (peak resident memory) of a process, in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def events_of(cluster: Cluster, workflows: list[int]) -> int:
    code = f"from workflows.models import WorkflowEvent\nprint(WorkflowEvent.objects.filter(workflow_id__in={workflows}).count())"  # noqa: E501
    return int(cluster.shell(code).splitlines()[-1])


def stop_all(app: AppProcesses, keep_logs: Path | None) -> None:
    """End the processes this bench started (by their handles); copy their logs to
    `keep_logs` if given."""
    for process in app.processes:
        if process.poll() is None:
            process.terminate()
    for process in app.processes:
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
    if keep_logs:
        keep_logs.mkdir(parents=True, exist_ok=True)
        for log in app.logs:
            (keep_logs / log.name).write_bytes(log.read_bytes())
