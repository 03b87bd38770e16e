"""The HTTP API's event stream degrades like a socket through a channel-layer outage: Redis
cut off from one Daphne (a TCP proxy the test closes and reopens) while three programs read a
workflow's Server-Sent Events; their streams stay open and bring the events stored meanwhile
from the database, the live ones again once Redis is back, each once in order; the process
says the outage once, with no traceback (a failing receive ended every stream with a logged
exception)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.api.live_app import alice_token
from tests.api.sse import HttpStream
from tests.services.test_layer_outage import store
from tests.support.apps import AppProcesses, app_env
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.services

READERS = 3


async def read_to(stream: HttpStream, seq: int) -> list[int]:
    """The ids of the events a stream brings until it has `seq` (it must stay open)."""
    ids: list[int] = []
    async with asyncio.timeout(60):
        while not ids or ids[-1] < seq:
            event = await stream.next()
            if event.id is not None and event.data:
                ids.append(int(event.id))
    return ids


async def test_streams_wait_out_a_redis_cut_and_the_process_says_it_once(redis_url, tmp_path):
    host, port = redis_url.split("//")[1].split("/")[0].split(":")
    with TcpProxy((host, int(port))) as proxy:
        proxied = redis_url.replace(f"{host}:{port}", f"127.0.0.1:{proxy.port}")
        env = app_env(
            tmp_path, "", POWERON_LLM_BASE_URL="", POWERON_LLM_API_KEY="", REDIS_URL=redis_url
        )
        app = AppProcesses(env, tmp_path)
        try:
            web = app.web(REDIS_URL=proxied, POWERON_CATCH_UP_SECONDS="0.5")
            base = f"http://127.0.0.1:{web}"
            auth = {"Authorization": f"Bearer {alice_token(base, ['read', 'run'])}"}
            async with httpx.AsyncClient(base_url=base, headers=auth, timeout=60) as client:
                created = await client.post("/api/v1/workflows", json={"title": "Outage"})
                workflow = created.json()["id"]
                path = f"/api/v1/workflows/{workflow}/events/stream"
                streams = [HttpStream(client, path) for _ in range(READERS)]
                for stream in streams:
                    await stream.__aenter__()
                try:
                    store(app, workflow, "before", send=True)
                    seen = [await read_to(stream, 3) for stream in streams]

                    proxy.cut()
                    store(app, workflow, "during", send=True)  # the Daphne hears none of it
                    seen = [s + await read_to(t, 6) for s, t in zip(seen, streams, strict=True)]
                    await asyncio.sleep(3)  # the streams keep trying the layer meanwhile
                    proxy.restore()
                    store(app, workflow, "after", send=True)
                    seen = [s + await read_to(t, 9) for s, t in zip(seen, streams, strict=True)]
                finally:
                    for stream in streams:
                        await stream.__aexit__(None, None, None)
        finally:
            app.stop()
        log = app.logs[0].read_text(errors="replace")
    assert seen == [list(range(1, 10))] * READERS
    assert "Traceback" not in log
    assert "the feed of workflow" not in log  # no stream ended failing
    assert log.count("The channel layer is down") == 1, log
