"""A channel-layer outage degrades quietly: Redis cut off from one Daphne (a TCP proxy the
test closes and reopens) while five viewers watch; their sockets stay open and read the
events stored meanwhile from the database, the live ones again once Redis is back, each once
in order; the process says the outage once, with no traceback (a 5 s cut under one Daphne
made 70 viewers reconnect 356 times and log 769 tracebacks)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from tests.support.apps import ROOT, AppProcesses, app_env, sign_in_and_create_workflow
from tests.support.sockets import connect
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.services

VIEWERS = 5
STORE = """
from asgiref.sync import async_to_sync
from workflows.engine.records.events import StatusEvent
from workflows.events import broadcast
from workflows.events.log import NewEvent, events_append
events = [NewEvent(StatusEvent(round=1, code="info", reason=f"{label} {n}")) for n in range(3)]
stored = events_append(workflow_id={workflow}, events=events)
if {send}:
    async_to_sync(broadcast.broadcast_many)(stored)
"""


def store(app: AppProcesses, workflow: int, label: str, *, send: bool) -> None:
    """Store three events in another process (broadcast through Redis unproxied, if `send`)."""
    code = STORE.replace("{workflow}", str(workflow)).replace("{send}", str(send))
    code = code.replace("{label}", label)
    command = [sys.executable, "manage.py", "shell", "-c", code]
    subprocess.run(command, cwd=ROOT, env=app.env, check=True, capture_output=True)


async def read_to(socket, seq: int) -> list[int]:
    """The seqs a socket receives until it has `seq` (it must stay open)."""
    seqs: list[int] = []
    while not seqs or seqs[-1] < seq:
        event = json.loads(await asyncio.wait_for(socket.recv(), 60))
        if event["seq"] is not None:
            seqs.append(event["seq"])
    return seqs


async def test_viewers_wait_out_a_redis_cut_and_the_process_says_it_once(redis_url, tmp_path):
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    with TcpProxy((host, int(port))) as proxy:
        proxied = redis_url.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
        env = app_env(
            tmp_path, "", POWERON_LLM_BASE_URL="", POWERON_LLM_API_KEY="", REDIS_URL=redis_url
        )
        app = AppProcesses(env, tmp_path)
        try:
            web = app.web(REDIS_URL=proxied, POWERON_CATCH_UP_SECONDS="0.5")
            cookie, workflow = sign_in_and_create_workflow(web)
            url = f"ws://127.0.0.1:{web}/ws/workflows/{workflow}/?format=json"
            headers = {"Cookie": cookie}
            sockets = [
                await connect(url, additional_headers=headers, ping_interval=None).__aenter__()
                for _ in range(VIEWERS)
            ]
            store(app, workflow, "before", send=True)
            seen = [await read_to(socket, 3) for socket in sockets]

            proxy.cut()
            store(app, workflow, "during", send=True)  # the Daphne hears none of it
            seen = [s + await read_to(socket, 6) for s, socket in zip(seen, sockets, strict=True)]
            await asyncio.sleep(3)  # the sockets keep trying the layer meanwhile
            proxy.restore()
            store(app, workflow, "after", send=True)
            seen = [s + await read_to(socket, 9) for s, socket in zip(seen, sockets, strict=True)]
            for socket in sockets:
                await socket.close()
        finally:
            app.stop()
        log = app.logs[0].read_text(errors="replace")
    assert seen == [list(range(1, 10))] * VIEWERS
    assert "Traceback" not in log
    assert log.count("The channel layer is down") == 1, log
    assert "1011" not in log
