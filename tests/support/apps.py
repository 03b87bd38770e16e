"""Running the app as real processes for tests: migrate, Daphne, run_workers, clean up."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "app-pass-123"
"""The password of the "alice" superuser every AppProcesses database starts with."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 120) -> None:
    """Wait until the app process listens on `port` (a process that exits fails at once; the
    deadline is generous because a busy machine starts Django and DBOS slowly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app process exited early with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError("Daphne did not start listening")


def app_env(tmp_path: Path, model_url: str, **extra: str) -> dict[str, str]:
    """The environment of app processes: a var dir of their own and the fake model (`extra`
    may override any of it: empty model settings give the demo model)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERON_", "OPENAI_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="poweron.settings",
        POWERON_VAR_DIR=str(tmp_path / "var"),
        POWERON_LLM_BASE_URL=model_url,
        POWERON_LLM_API_KEY="sk-test-not-real",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
    )
    env.update(extra)
    return env


class AppProcesses:
    """App processes sharing one database, channel layer and media folder, with a migrated
    database holding the superuser "alice"."""

    def __init__(self, env: dict[str, str], tmp_path: Path) -> None:
        self.env = env
        self.tmp_path = tmp_path
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.ports: list[int] = []
        """The ports of the Daphne processes started, in order."""
        self.manage("migrate", "--noinput")
        self.manage("createsuperuser", "--noinput", "--username", "alice", "--email", "a@b.org")

    def manage(self, *args: str) -> None:
        command = [sys.executable, "manage.py", *args]
        subprocess.run(command, cwd=ROOT, env=self.env, check=True, capture_output=True)

    def start(self, command: list[str], **env: str) -> subprocess.Popen:
        self.logs.append(self.tmp_path / f"process-{len(self.logs)}.log")
        with self.logs[-1].open("wb") as log:
            process = subprocess.Popen(
                command, cwd=ROOT, env={**self.env, **env}, stdout=log, stderr=log
            )
        self.processes.append(process)
        return process

    def web(self, *, port: int | None = None, **env: str) -> int:
        """A Daphne process (`env` overrides the shared environment) on `port` (a free one
        by default: give the port of one that ended to restart it); its port once it
        listens."""
        port = port or free_port()
        process = self.start(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "poweron.asgi:application",
            ],
            **env,
        )
        wait_for_port(port, process)
        self.ports.append(port)
        return port

    def worker(self, *, executor_id: str | None = None) -> subprocess.Popen:
        """A `run_workers` process, once it says it is ready."""
        command = [sys.executable, "-u", "manage.py", "run_workers"]
        if executor_id:
            command += ["--executor-id", executor_id]
        process = self.start(command)
        deadline = time.monotonic() + 30
        while "Worker ready" not in self.logs[-1].read_text():
            assert process.poll() is None, self.logs[-1].read_text()
            assert time.monotonic() < deadline, "the worker did not start"
            time.sleep(0.1)
        return process

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
            process.wait(timeout=15)
        for log in self.logs:
            print(log.name, log.read_text()[-4000:])  # shown when a test fails


def sign_in_and_create_workflow(port: int, *, cookie: str = "") -> tuple[str, int]:
    """Sign in over HTTP on one process (unless a session `cookie` is given); return the
    session cookie and a new workflow id."""
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, timeout=60) as client:
        if cookie:
            client.cookies.set("sessionid", cookie.removeprefix("sessionid="))
        else:
            login = client.get("/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
            client.post(
                "/login/",
                data={"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
            )
        page = client.get("/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        created = client.post(
            "/workflows/new/",
            data={"title": "Scale", "mode": "react", "max_steps": 3, "csrfmiddlewaretoken": token},
        )
        workflow_id = int(created.headers["location"].rstrip("/").split("/")[-1])
        return f"sessionid={client.cookies['sessionid']}", workflow_id
