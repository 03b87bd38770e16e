"""Live delivery: an event is rendered once and the same bytes go to every viewer; a streamed
answer travels in frames at a human rate, and every viewer's text is complete and in order,
also one that joins in the middle of the stream."""

import asyncio

import pytest
from channels.db import database_sync_to_async

from tests.live import connect, is_final, receive_until
from tests.support.chat_app import workflow_with_upload
from tests.support.fake_openai import FakeReply
from tests.support.replies import extract_step, stop, taskplan
from workflows import services
from workflows.engine.records.events import StatusEvent
from workflows.events import broadcast
from workflows.execution import launcher, recording
from workflows.live import follow

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

WORDS = 600
ANSWER = " ".join(f"w{n}" for n in range(WORDS))


def streamed_text(events) -> str:
    """The answer as a page shows it from deltas: by offset, a new attempt starting over,
    a piece past a gap ignored (the stored text fills it)."""
    text, attempt = "", None
    for event in events:
        if event["type"] != "delta":
            continue
        piece = event["payload"]
        if piece["attempt"] != attempt:
            text, attempt = "", piece["attempt"]
        offset, more = piece["offset"], piece["text"]
        if offset <= len(text) < offset + len(more):
            text += more[len(text) - offset :]
    return text


async def test_a_streamed_answer_travels_in_frames_and_arrives_whole(alice, model):
    """600 streamed pieces reach the viewer as a few dozen frames; the text is complete."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step("docList:round1_upload"),
        stop(),
        FakeReply(content=ANSWER, chunk_delay=0.004),
    )
    viewer = await connect(alice, workflow.pk)
    await viewer.send_json_to({"action": "send", "text": "Summarise", "documents": [upload.pk]})
    events = await receive_until(viewer, is_final, timeout=30)
    frames = [e for e in events if e["type"] == "delta" and e["seq"] is None]
    assert 3 <= len(frames) < WORDS / 5  # framed at a human rate, not one per token
    assert streamed_text(events) == ANSWER
    await viewer.disconnect()


async def test_an_answer_written_with_refines_stop_streams_live_too(alice, model):
    """In a round of one task refine writes the answer inside its JSON decision: there is no
    final call, and the viewer still sees the answer arrive in frames while it is written,
    then the same text as the stored message."""
    workflow, upload = await workflow_with_upload(alice)
    decision = {"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": ANSWER}
    model.add(
        taskplan("Summarise"),
        *extract_step("docList:round1_upload"),
        FakeReply(content=decision, chunk_delay=0.004),
    )
    viewer = await connect(alice, workflow.pk)
    await viewer.send_json_to({"action": "send", "text": "Summarise", "documents": [upload.pk]})
    events = await receive_until(viewer, is_final, timeout=30)
    model.assert_complete()
    assert model.kinds()[-1] == "RefinementDecision" and model.requests[-1]["stream"]
    frames = [e for e in events if e["type"] == "delta" and e["seq"] is None]
    assert 3 <= len(frames) < WORDS / 5
    assert streamed_text(events) == ANSWER
    answer = [e for e in events if e["type"] == "message" and e["payload"]["role"] == "assistant"]
    assert answer[-1]["payload"]["content"] == ANSWER
    await viewer.disconnect()


async def test_a_viewer_joining_mid_stream_gets_the_whole_text_in_order(alice, model):
    """Joining while the answer streams: the stored text so far, then the live frames."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step("docList:round1_upload"),
        stop(),
        FakeReply(content=ANSWER, chunk_delay=0.005),
    )
    first = await connect(alice, workflow.pk)
    await first.send_json_to({"action": "send", "text": "Summarise", "documents": [upload.pk]})
    await receive_until(first, lambda e: e["type"] == "delta", timeout=30)
    await receive_until(first, lambda e: e["type"] == "delta" and e["seq"] is not None)
    late = await connect(alice, workflow.pk)  # replays from seq 0, then live
    events = await receive_until(late, is_final, timeout=30)
    assert streamed_text(events) == ANSWER
    seqs = [e["seq"] for e in events if e["seq"] is not None]
    assert seqs == list(range(1, len(seqs) + 1))
    await first.disconnect()
    await late.disconnect()


async def test_a_live_event_is_rendered_once_for_every_viewer(alice, monkeypatch):
    """Two HTML viewers get the same bytes, and no consumer renders a live event itself."""
    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)

    async def store(reason: str):
        event = StatusEvent(round=1, code="info", reason=reason)
        return await database_sync_to_async(recording.record)(workflow.pk, event)

    await store("before")  # replayed to each viewer as it connects
    viewers = [await connect(alice, workflow.pk, "after=0") for _ in range(2)]
    for viewer in viewers:
        assert "before" in await viewer.receive_from(timeout=5)
    renders = []
    monkeypatch.setattr(follow, "render_event", lambda e: renders.append(e) or "")
    await broadcast.broadcast(await store("once"))
    first, second = [await viewer.receive_from(timeout=5) for viewer in viewers]
    assert first == second and 'data-seq="2"' in first and "once" in first
    assert renders == []  # no per-viewer template work for a live event
    for viewer in viewers:
        await viewer.disconnect()


async def test_what_a_run_queues_while_the_layer_is_busy_leaves_in_one_message(alice):
    """The events a run queues before its sender gets to the layer go out together, in
    order, as one layer message (each message costs every receiving process round trips)."""
    from channels.layers import get_channel_layer

    workflow = await database_sync_to_async(services.workflow_create)(owner=alice)
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(broadcast.viewers_group(workflow.pk), channel)
    stored = [
        await database_sync_to_async(recording.record)(
            workflow.pk, StatusEvent(round=1, code="info", reason=f"n{n}")
        )
        for n in range(3)
    ]
    sender = broadcast.Sender()
    for envelope in stored:
        sender.send(envelope)
    await sender.close()
    message = await asyncio.wait_for(layer.receive(channel), 5)
    assert message["type"] == "workflow.events"
    assert [event["seq"] for event in message["events"]] == [1, 2, 3]
    assert all("n2" in message["events"][2][part] for part in ("json", "html"))
    assert sender.dropped == 0


async def test_stored_deltas_are_few_per_second(alice, model):
    """The stored record of a stream is coalesced: far fewer rows than pieces."""
    workflow, upload = await workflow_with_upload(alice)
    model.add(
        taskplan("Summarise"),
        *extract_step("docList:round1_upload"),
        stop(),
        FakeReply(content=ANSWER, chunk_delay=0.004),
    )
    await launcher.start_round(
        workflow_id=workflow.pk, user=alice, text="Summarise", document_ids=[upload.pk]
    )
    await launcher.wait_for(workflow.pk)
    stored = await workflow.events.filter(type="delta").acount()
    assert 1 <= stored < 20


async def test_a_channel_layer_that_cannot_be_reached_is_said_at_start(settings, caplog):
    """With Redis out of reach (a closed loopback port) the start-up check says so, naming
    the setting, and the process goes on; the in-memory layer passes it."""
    from workflows.events import broadcast

    assert await broadcast.check_layer()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},
        }
    }
    assert not await broadcast.check_layer()
    assert "The channel layer cannot be reached" in caplog.text and "REDIS_URL" in caplog.text
