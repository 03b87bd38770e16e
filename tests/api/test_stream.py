"""The live event stream over SSE, through the real ASGI app in the test's event loop (the
in-memory channel layer): stored events then live ones, each once, resumed by Last-Event-ID
or `after`, heartbeats, `until=final`, who may read it, and a client that goes away."""

from __future__ import annotations

import json

import jsonschema
import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.test import AsyncClient

from tests.api.conftest import bearer, make_token
from tests.api.sse import AsgiStream, is_final
from tests.live import session_cookie
from tests.support.chat_app import NOTE
from workflows import services
from workflows.api import tokens
from workflows.api.event_schema import event_schema
from workflows.engine.records.events import DeltaEvent, StatusEvent
from workflows.events import broadcast
from workflows.events.contract import Envelope, RunEvent
from workflows.execution import recording
from workflows.models import ChatWorkflow

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def unlimited_requests(settings):
    settings.POWERON_API_REQUESTS_PER_MINUTE = 0


@database_sync_to_async
def new_workflow(owner, title: str = "Streamed"):
    return services.workflow_create(owner=owner, title=title)


@database_sync_to_async
def store(workflow, count: int) -> list[Envelope]:
    return [
        recording.record(workflow.pk, StatusEvent(round=1, code="info", reason=f"n{n}"))
        for n in range(count)
    ]


@database_sync_to_async
def store_final(workflow, status: str = "completed") -> Envelope:
    return recording.record(workflow.pk, RunEvent(round=1, status=status, reason="ended"))


@database_sync_to_async
def token(user, *scopes: str) -> str:
    return make_token(user, *scopes)


async def stream(workflow_id: int, secret: str, query: str = "", **headers: str) -> AsgiStream:
    """An open stream of alice's workflow (its 200 checked)."""
    opened = AsgiStream(
        f"/api/v1/workflows/{workflow_id}/events/stream?{query}", {**bearer(secret), **headers}
    )
    status, answer = await opened.open()
    assert status == 200
    assert answer["content-type"] == "text/event-stream"
    assert answer["cache-control"] == "no-cache, no-store"
    return opened


async def test_stored_then_live_events_arrive_in_order_each_once(alice):
    """After seq 2 of 4: 3 and 4 (id = seq, event = type, data = the stored JSON), then live
    ones; a duplicate is dropped, a seq the layer skipped is read from the database, and a
    live frame of an answer comes as `delta` without an id."""
    workflow = await new_workflow(alice)
    stored = await store(workflow, 4)
    reader = await stream(workflow.pk, await token(alice, "read"), "after=2")
    retry = await reader.next()
    assert retry.retry == 1500
    replayed = [await reader.next() for _ in range(2)]
    assert [(e.id, e.event) for e in replayed] == [("3", "status"), ("4", "status")]
    assert [e.json for e in replayed] == [each.as_json() for each in stored[2:]]

    five, six, seven = await store(workflow, 3)
    await broadcast.broadcast(five)
    await broadcast.broadcast(stored[1])  # had already: dropped
    frame = DeltaEvent(round=1, key="round1_answer", text="Hel", offset=0, attempt="a")
    await broadcast.broadcast(Envelope(workflow=workflow.pk, seq=None, event=frame))
    await broadcast.broadcast(seven)  # 6 never broadcast: read from the database
    live = [await reader.next() for _ in range(4)]
    assert [(e.id, e.event) for e in live] == [("5", "status"), (None, "delta"), ("6", "status"),
                                               ("7", "status")]  # fmt: skip
    assert live[1].json["payload"]["text"] == "Hel" and live[1].json["seq"] is None
    assert live[2].json == six.as_json()
    await reader.disconnect()


async def test_last_event_id_resumes_where_the_client_was_and_wins_over_after(alice):
    """A reconnecting EventSource sends Last-Event-ID with the URL it first used: the stream
    goes on after that seq; an `after` past the end counts as the end."""
    workflow = await new_workflow(alice)
    await store(workflow, 5)
    secret = await token(alice, "read")
    reader = await stream(workflow.pk, secret, "after=1", **{"Last-Event-ID": "3"})
    events = await reader.until(lambda e: e.id == "5")
    assert [e.id for e in events] == ["4", "5"]
    await reader.disconnect()

    ahead = await stream(workflow.pk, secret, "after=99")
    (six,) = await store(workflow, 1)
    await broadcast.broadcast(six)
    assert [e.id for e in await ahead.until(lambda e: True)] == ["6"]
    await ahead.disconnect()


async def test_until_final_ends_the_stream_after_the_runs_final_status(alice):
    """With until=final the stream ends (the body is complete) right after the first final
    run status after `after`; the client can read the events it missed from that seq."""
    workflow = await new_workflow(alice)
    await store(workflow, 2)
    await store_final(workflow)
    reader = await stream(workflow.pk, await token(alice, "read"), "after=1&until=final")
    events = await reader.until(is_final)
    assert [e.id for e in events] == ["2", "3"]
    with pytest.raises(EOFError):
        await reader.next()

    waiting = await stream(workflow.pk, await token(alice, "read"), "after=3&until=final")
    four, five = await store(workflow, 1) + [await store_final(workflow, "failed")]
    for each in (four, five):
        await broadcast.broadcast(each)
    assert [e.id for e in await waiting.until(is_final)] == ["4", "5"]
    with pytest.raises(EOFError):
        await waiting.next()


async def test_events_waiting_for_a_reader_go_out_together_and_until_final_cuts_there(alice):
    """A reader far behind gets the stored events several to a write, in order, each once;
    with until=final the stream ends at the final status, though the next round's events
    were waiting in the same write."""
    workflow = await new_workflow(alice)
    await store(workflow, 150)
    await store_final(workflow)
    await store(workflow, 5)  # the next round's, stored already
    reader = await stream(workflow.pk, await token(alice, "read"), "until=final")
    writes, events = 0, []
    while not reader.ended:
        message = await reader.communicator.receive_output(10)
        writes += 1
        events += reader.parser.feed(message.get("body", b"").decode())
        reader.ended = not message.get("more_body")
    await reader.communicator.wait(10)
    ids = [e.id for e in events if e.data]
    assert ids == [str(seq) for seq in range(1, 152)]
    assert is_final(events[-1])
    assert writes <= 10  # the retry line, the events in a few writes, the end


async def test_a_silence_is_filled_with_heartbeats(alice, settings):
    """Nothing to send for a heartbeat's interval: a comment line keeps the stream open."""
    settings.POWERON_SSE_HEARTBEAT_SECONDS = 0.1
    workflow = await new_workflow(alice)
    reader = await stream(workflow.pk, await token(alice, "read"))
    assert (await reader.next()).retry == 1500
    beat = await reader.next()
    assert beat.comment == "keepalive"
    await reader.disconnect()


async def test_a_revoked_token_ends_its_stream(alice, settings):
    """A stream checks its token again as it goes on: once revoked, the stream ends."""
    settings.POWERON_SSE_HEARTBEAT_SECONDS = 0.1
    workflow = await new_workflow(alice)
    secret = await token(alice, "read")
    reader = await stream(workflow.pk, secret)
    assert (await reader.next()).retry == 1500
    assert (await reader.next()).comment == "keepalive"
    found = await database_sync_to_async(tokens.token_authenticate)(secret)
    await database_sync_to_async(tokens.token_revoke)(token=found)
    with pytest.raises(EOFError):
        while True:
            await reader.next()


async def test_a_client_that_goes_away_leaves_nothing_behind(alice):
    """When the client disconnects, the stream's generator ends: its channel leaves the
    workflow's viewers on the layer."""
    workflow = await new_workflow(alice)
    await store(workflow, 1)
    reader = await stream(workflow.pk, await token(alice, "read"))
    await reader.until(lambda e: e.id == "1")
    layer = get_channel_layer()
    group = broadcast.viewers_group(workflow.pk)
    assert len(layer.groups.get(group, {})) == 1
    await reader.disconnect()
    assert not layer.groups.get(group)


async def test_who_may_read_the_stream(alice, bob):
    """No token: 401; a token without `read`: 403; bob's token on alice's workflow and on
    none: the same 404; alice's signed-in browser (EventSource sends its cookie): 200."""
    workflow = await new_workflow(alice)
    path = f"/api/v1/workflows/{workflow.pk}/events/stream"
    cases = [
        ({}, 401, "unauthenticated"),
        (bearer(await token(alice, "run")), 403, "insufficient-scope"),
        (bearer(await token(bob, "read")), 404, "not-found"),
    ]
    for headers, status, kind in cases:
        refused = AsgiStream(path, headers)
        assert (await refused.open())[0] == status
        assert json.loads(await refused.body())["type"] == f"/api/v1/problems/{kind}"
    nothing = AsgiStream("/api/v1/workflows/999999/events/stream", bearer(await token(bob, "read")))
    assert (await nothing.open())[0] == 404
    browser = AsgiStream(path, {"cookie": await session_cookie(alice)})
    assert (await browser.open())[0] == 200
    await browser.disconnect()


async def test_the_event_schema_is_served_to_anyone_and_linked_from_the_document(alice):
    """/api/v1/events.schema.json needs no token; the OpenAPI document links it."""
    client = AsyncClient()
    served = await client.get("/api/v1/events.schema.json")
    assert served.status_code == 200 and served["Content-Type"] == "application/schema+json"
    assert served.json() == event_schema()
    document = (await client.get("/api/v1/openapi.json")).json()
    assert document["externalDocs"]["url"] == "/api/v1/events.schema.json"
    payload = document["components"]["schemas"]["EventOut"]["properties"]["payload"]
    assert payload["externalDocs"]["url"] == "/api/v1/events.schema.json"
    jsonschema.Draft202012Validator.check_schema(served.json())


@pytest.mark.usefixtures("durable")
async def test_a_round_streams_whole_and_every_event_matches_the_schema(alice, async_api):
    """A demo round sent through the API and read over SSE until its final status: seqs
    1..n, each event as /events stores it and valid against the event schema, the answer's
    live frames among them. (The demo model answers a message with a document to read.)"""
    created = await async_api.post(
        "/api/v1/workflows", {"title": "SSE"}, content_type="application/json"
    )
    workflow_id = created.json()["id"]
    note = await database_sync_to_async(services.document_upload)(
        workflow=await ChatWorkflow.objects.aget(pk=workflow_id), name="notes.md", data=NOTE
    )
    reader = await stream(workflow_id, await token(alice, "read"), "until=final")
    sent = await async_api.post(
        f"/api/v1/workflows/{workflow_id}/messages",
        {"text": "Summarise my notes", "documents": [note.pk]},
        content_type="application/json",
    )
    assert sent.status_code == 202
    events = await reader.until(is_final, timeout=60)
    stored = [e for e in events if e.id is not None]
    assert [int(e.id) for e in stored] == list(range(1, len(stored) + 1))
    page = await async_api.get(f"/api/v1/workflows/{workflow_id}/events", {"limit": 500})
    assert [e.json for e in stored] == page.json()["events"]
    validator = jsonschema.Draft202012Validator(event_schema())
    for event in events:
        validator.validate(event.json)
        assert event.event == event.json["type"]
    assert stored[-1].json["payload"]["status"] == "completed"
