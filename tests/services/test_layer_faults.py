"""The channel layer is a best-effort doorbell: when Redis is cut off from the process that
runs a workflow, the run still completes, and a viewer on another process still sees its
end, read from the database."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.live import is_final
from tests.services.test_scale_out import make_cluster
from tests.support.apps import sign_in_and_create_workflow
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import params, review, select, stop, taskplan
from tests.support.sockets import connect
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.services

THINK = select(
    "ai.process",
    parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
)


async def next_event(socket, timeout: float = 20) -> dict:
    return json.loads(await asyncio.wait_for(socket.recv(), timeout))


async def test_a_redis_interruption_neither_fails_the_run_nor_hides_its_end(
    postgres_url, redis_url, tmp_path
):
    """Redis is cut off from the running process for the rest of the round: every broadcast
    fails there, yet the round completes, and the viewer on the other process gets every
    event up to the final status from the database, within seconds, with no gap."""
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    with FakeOpenAIServer() as model, TcpProxy((host, int(port))) as proxy:
        model.add(
            taskplan("Think"),
            THINK,
            params(aiPrompt="Think it through"),
            "A thought worth keeping.",
            FakeReply(content=json.dumps(stop()), delay=2),
            review(),
            "All done.",
        )
        proxied = redis_url.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
        cluster = make_cluster(
            postgres_url, redis_url, tmp_path, model, POWERON_CATCH_UP_SECONDS="1"
        )
        try:
            runner = cluster.web(REDIS_URL=proxied)
            viewer = cluster.web()
            cookie, workflow_id = sign_in_and_create_workflow(viewer)
            headers = {"Cookie": cookie}
            path = f"/ws/workflows/{workflow_id}/?format=json"
            async with connect(
                f"ws://127.0.0.1:{viewer}{path}", additional_headers=headers
            ) as watch:
                async with connect(
                    f"ws://127.0.0.1:{runner}{path}", additional_headers=headers
                ) as sender:
                    await sender.send(json.dumps({"action": "send", "text": "Think hard"}))
                    seen = [await next_event(watch)]
                    while seen[-1]["type"] != "observe":
                        seen.append(await next_event(watch))
                proxy.cut()  # the refine reply is still 2 s away
                cut_at = time.monotonic()
                while not is_final(seen[-1]):
                    seen.append(await next_event(watch))
                waited = time.monotonic() - cut_at
                proxy.restore()
        finally:
            cluster.stop()
    assert seen[-1]["payload"]["status"] == "completed"
    seqs = [event["seq"] for event in seen if event["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))  # no gap, no duplicate
    assert waited < 15  # 2 s of model delay, then the viewer's catch-up
    runner_log = cluster.logs[0].read_text()
    assert "The channel layer is down" in runner_log  # said once per outage (events/outage)
    assert "events were not broadcast (viewers read them stored)" in runner_log
    assert f"workflow {workflow_id} failed" not in runner_log
