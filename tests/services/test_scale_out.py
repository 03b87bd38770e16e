"""Two Daphne processes on PostgreSQL and Redis: a viewer on one sees a run on the other,
and its stop reaches the process that runs it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.browser.test_chat_browser import free_port, wait_for_port
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import select, taskplan

pytestmark = pytest.mark.services

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "scale-pass-123"


@pytest.fixture
def cluster(postgres_url, redis_url, tmp_path):
    """Two app processes sharing one database, one channel layer and one media folder."""
    model = FakeOpenAIServer().start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERON_", "OPENAI_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="poweron.settings",
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_url,
        SECRET_KEY="scale-out-test-key-" + "x" * 40,
        POWERON_VAR_DIR=str(tmp_path / "var"),
        POWERON_LLM_BASE_URL=model.url,
        POWERON_LLM_API_KEY="sk-test-not-real",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run(
        [*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    subprocess.run(
        [
            *manage,
            "createsuperuser",
            "--noinput",
            "--username",
            "alice",
            "--email",
            "a@example.org",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    processes, ports, logs = [], [], []
    daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "poweron.asgi:application"]
    try:
        for index in range(2):
            ports.append(free_port())
            logs.append(tmp_path / f"daphne-{index}.log")
            with logs[-1].open("wb") as log:
                command = [*daphne[:-1], "-p", str(ports[-1]), daphne[-1]]
                processes.append(
                    subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
                )
        for port, process in zip(ports, processes, strict=True):
            wait_for_port(port, process)
        yield model, ports
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=10)
        for log in logs:
            print(log.read_text()[-4000:])  # shown when the test fails
        model.stop()


def sign_in_and_create_workflow(port: int) -> tuple[str, int]:
    """Sign in over HTTP on one process; return the session cookie and a new workflow id."""
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base) as client:
        login = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)[1]
        client.post(
            "/login/",
            data={"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
        )
        created = client.post(
            "/workflows/new/",
            data={
                "title": "Scale",
                "mode": "react",
                "max_steps": 3,
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
            },
        )
        workflow_id = int(created.headers["location"].rstrip("/").split("/")[-1])
        return f"sessionid={client.cookies['sessionid']}", workflow_id


async def test_viewer_on_one_process_sees_and_stops_a_run_on_the_other(cluster):
    """Events of a run in process B reach a viewer on process A in seq order; A's stop
    cancels B's model call and the run ends as stopped."""
    model, (port_a, port_b) = cluster
    # web.search is not in the catalog here (no provider): select an action that is.
    model.add(taskplan("Think"), select("ai.process"), FakeReply(content="{}", delay=60))
    cookie, workflow_id = sign_in_and_create_workflow(port_a)
    headers = {"Cookie": cookie, "Origin": "http://127.0.0.1"}
    path = f"/ws/workflows/{workflow_id}/?format=json"
    async with (
        connect(f"ws://127.0.0.1:{port_a}{path}", additional_headers=headers) as viewer,
        connect(f"ws://127.0.0.1:{port_b}{path}", additional_headers=headers) as sender,
    ):
        await sender.send(json.dumps({"action": "send", "text": "Think hard"}))
        seen = []
        while not seen or seen[-1]["type"] != "plan":
            seen.append(json.loads(await asyncio.wait_for(viewer.recv(), 20)))
        asked = time.monotonic()
        await viewer.send(json.dumps({"action": "stop"}))
        while not (seen[-1]["type"] == "status" and seen[-1]["payload"].get("final")):
            seen.append(json.loads(await asyncio.wait_for(viewer.recv(), 20)))
        elapsed = time.monotonic() - asked
    seqs = [event["seq"] for event in seen if event["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seen[-1]["payload"]["status"] == "stopped"
    assert elapsed < 5  # the parameters call was still waiting for 60 s
