"""A real Daphne for the hardening tests (the attacks of issue 31 replayed against it), and a
way to run Django code against its database."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.support.apps import PASSWORD, ROOT, AppProcesses, app_env

SLOW = httpx.Timeout(120.0)
"""A busy test machine (two cores, several suites at once) can take seconds per request."""


class LiveApp:
    """One Daphne on its own database (the demo model unless a model URL is given)."""

    def __init__(self, processes: AppProcesses, port: int) -> None:
        self.processes = processes
        self.port = port

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def socket_url(self, workflow_id: int, query: str = "format=json") -> str:
        return f"ws://127.0.0.1:{self.port}/ws/workflows/{workflow_id}/?{query}"

    def shell(self, code: str) -> str:
        """Run Python with Django set up against the app's database; its standard output."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
            cwd=ROOT,
            env=self.processes.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def browser(self) -> httpx.Client:
        """An HTTP client of alice's, signed in (close it after use)."""
        client = httpx.Client(base_url=self.base, timeout=SLOW)
        login = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
        data = {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token}
        assert client.post("/login/", data=data).status_code == 302
        return client

    def workflow(self, client: httpx.Client, title: str = "Hardening") -> int:
        """A new workflow of the signed-in user of `client`."""
        page = client.get("/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
        data = {"title": title, "mode": "react", "max_steps": 3, "csrfmiddlewaretoken": token}
        created = client.post("/workflows/new/", data=data)
        return int(created.headers["location"].rstrip("/").split("/")[-1])

    def signed_in_workflow(self) -> tuple[str, int]:
        """alice's session cookie and a new workflow of hers."""
        client = self.browser()
        try:
            workflow = self.workflow(client)
            return f"sessionid={client.cookies['sessionid']}", workflow
        finally:
            client.close()

    def log(self) -> str:
        """What the Daphne wrote so far."""
        return self.processes.logs[0].read_text(errors="replace")


def stop(processes: AppProcesses) -> None:
    """Stop the app's processes: SIGTERM, a generous wait on a busy machine (a Daphne ending
    its rounds and DBOS), then SIGKILL for any still there; their logs are printed (shown
    when a test fails)."""
    for process in processes.processes:
        if process.poll() is None:
            process.terminate()
    for process in processes.processes:
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    for log in processes.logs:
        print(log.name, log.read_text(errors="replace")[-4000:])


def start_app(tmp_path, model_url: str = "", **env: str) -> LiveApp:
    processes = AppProcesses(app_env(tmp_path, model_url, **env), tmp_path)
    try:
        port = processes.web()
    except BaseException:
        stop(processes)
        raise
    return LiveApp(processes, port)


@pytest.fixture(scope="module")
def live_app(tmp_path_factory) -> Iterator[LiveApp]:
    """A Daphne with the demo model (answers at once), alice its superuser: one per module
    (each test works in workflows of its own)."""
    app = start_app(tmp_path_factory.mktemp("app"), POWERON_DEMO_DELAY_MS="0")
    try:
        yield app
    finally:
        stop(app.processes)
