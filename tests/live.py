"""Helpers for WebSocket tests: a signed-in communicator against the real ASGI app."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from poweron.asgi import application
from workflows.engine.records.events import StatusEvent
from workflows.events.contract import Envelope
from workflows.execution import recording


@sync_to_async
def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def connect(user, workflow_id: int, query: str = "format=json") -> WebsocketCommunicator:
    """Open a socket on a workflow as `user` (None: anonymous); asserts the handshake."""
    headers = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
    if user is not None:
        headers.append((b"cookie", (await session_cookie(user)).encode()))
    communicator = WebsocketCommunicator(
        application, f"/ws/workflows/{workflow_id}/?{query}", headers=headers
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


async def receive(communicator: WebsocketCommunicator, timeout: float = 5) -> dict[str, Any]:
    return json.loads(await communicator.receive_from(timeout=timeout))


async def receive_until(
    communicator: WebsocketCommunicator, predicate, timeout: float = 20
) -> list[dict[str, Any]]:
    """Every event up to and including the first that matches `predicate`."""
    events = []
    while True:
        event = await receive(communicator, timeout)
        events.append(event)
        if predicate(event):
            return events


def is_final(event: dict[str, Any]) -> bool:
    """Whether a JSON event is a run's final status (its last event)."""
    return event["type"] == "run" and event["payload"]["status"] in (
        "completed",
        "failed",
        "stopped",
    )


@database_sync_to_async
def store_events(workflow, count: int) -> list[Envelope]:
    """Store `count` status events in the workflow, as a run records them (seqs 1, 2, …)."""
    return [
        recording.record(workflow.pk, StatusEvent(round=1, code="info", reason=f"n{n}"))
        for n in range(count)
    ]
