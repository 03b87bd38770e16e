"""The OpenAI-compatible endpoint through the app in the test's event loop: the modes as
models, a chat completion that runs a round (its answer, its usage, how it ended), the
conversation it sees, and every refusal in OpenAI's error shape with nothing stored."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from tests.api.conftest import BearerAsyncClient, make_token
from tests.api.sse import AsgiStream, Parser
from tests.support.fake_openai import FakeReply
from workflows import services
from workflows.models import ChatMessage, ChatWorkflow, WorkflowEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("durable")]

CHAT_PLAN = {"overview": "chat", "tasks": []}
ANSWER = "PowerOn plans tasks, runs actions and answers with what it found."


@pytest.fixture(autouse=True)
def unlimited_requests(settings):
    settings.POWERON_API_REQUESTS_PER_MINUTE = 0


@pytest.fixture
async def openai_api(alice) -> BearerAsyncClient:
    return BearerAsyncClient(await database_sync_to_async(make_token)(alice, "run"))


class Answer:
    """A non-streamed answer read whole."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, body

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]

    def json(self):
        return json.loads(self.content)


async def complete(client, **body):
    """A chat completion as Daphne hands it to the app (a request waiting for its round
    must not hold the test client's one thread for sync code, which the round needs)."""
    body.setdefault("model", "poweron-react")
    if body.get("stream"):
        return await client.post("/v1/chat/completions", body, content_type="application/json")
    headers = {"Content-Type": "application/json"}
    if client.token:
        headers["Authorization"] = f"Bearer {client.token}"
    request = AsgiStream(
        "/v1/chat/completions", headers, method="POST", body=json.dumps(body).encode()
    )
    status, answer = await request.open()
    return Answer(status, answer, await request.body(timeout=60))


@database_sync_to_async
def round_usage(workflow_id: int, round: int) -> dict[str, int]:
    events = WorkflowEvent.objects.filter(workflow_id=workflow_id, round=round, type="usage")
    prompt = sum(e.payload["promptTokens"] for e in events)
    completion = sum(e.payload["completionTokens"] for e in events)
    return {"prompt": prompt, "completion": completion}


@database_sync_to_async
def answer_of(workflow_id: int) -> str:
    return ChatMessage.objects.filter(workflow_id=workflow_id, role="assistant").last().content


async def test_the_modes_are_the_models(openai_api):
    """GET /v1/models lists one model per mode; one is read by its name; another is 404."""
    listed = (await openai_api.get("/v1/models")).json()
    assert [m["id"] for m in listed["data"]] == [
        "poweron-react", "poweron-actionplan", "poweron-reasoning",
    ]  # fmt: skip
    assert all(m["object"] == "model" and m["owned_by"] == "poweron" for m in listed["data"])
    one = await openai_api.get("/v1/models/poweron-reasoning")
    assert one.json()["id"] == "poweron-reasoning"
    unknown = await openai_api.get("/v1/models/gpt-4o")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "model_not_found"


async def test_a_completion_is_the_rounds_answer_with_its_usage(alice, openai_api, model):
    """A new workflow in the model's mode runs the message as its round 1; the answer is the
    stored answer, the usage the round's calls summed, finish_reason stop."""
    model.add(CHAT_PLAN, ANSWER)
    answered = await complete(
        openai_api, model="poweron-actionplan",
        messages=[{"role": "user", "content": "What can you do?"}],
    )  # fmt: skip
    assert answered.status_code == 200, answered.content
    body = answered.json()
    workflow_id = body["poweron"]["workflow"]
    assert answered["X-PowerOn-Workflow"] == str(workflow_id)
    workflow = await ChatWorkflow.objects.aget(pk=workflow_id)
    assert (workflow.owner_id, workflow.mode, workflow.title) == (
        alice.pk, "actionplan", "What can you do?",
    )  # fmt: skip
    (choice,) = body["choices"]
    assert choice["message"]["content"] == await answer_of(workflow_id)
    assert choice["message"]["content"].startswith(ANSWER)
    assert choice["finish_reason"] == "stop"
    usage = await round_usage(workflow_id, 1)
    assert usage["prompt"] > 0
    assert (body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]) == (
        usage["prompt"], usage["completion"],
    )  # fmt: skip
    assert body["usage"]["total_tokens"] == usage["prompt"] + usage["completion"]
    assert body["poweron"]["status"] == "completed" and body["poweron"]["round"] == 1
    assert body["poweron"]["page"].endswith(f"/workflows/{workflow_id}/")
    assert body["model"] == "poweron-actionplan" and body["object"] == "chat.completion"


async def test_a_stream_sends_the_answer_as_it_is_written_then_the_finish_and_usage(
    openai_api, model
):
    """With stream: chunks whose content adds up to the stored answer (written in several
    pieces), the finish, the usage with include_usage, then [DONE]; no step in the text."""
    model.add(CHAT_PLAN, FakeReply(content=ANSWER, chunk_delay=0.05))
    answered = await complete(
        openai_api, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "What can you do?"}],
    )  # fmt: skip
    assert answered["Content-Type"] == "text/event-stream"
    parser, events = Parser(), []
    async for part in answered.streaming_content:
        events += [e for e in parser.feed(part.decode()) if e.comment is None]
    assert events[-1].data == "[DONE]"
    chunks = [json.loads(e.data) for e in events[:-1]]
    workflow_id = chunks[0]["poweron"]["workflow"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == await answer_of(workflow_id)
    pieces = [c for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")]
    assert len(pieces) > 1
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "stop" and set(finish[:-1]) == {None}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


async def test_earlier_messages_are_quoted_for_a_new_workflow_and_a_named_one_goes_on(
    alice, openai_api, model
):
    """The earlier messages are quoted before the last in the round's message (the page
    shows what the round read); naming the workflow in metadata runs its next round with the
    last message alone, its own history being the context."""
    model.add(CHAT_PLAN, "Paris.", CHAT_PLAN, "About two million.")
    first = await complete(
        openai_api,
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris."},
            {"role": "user", "content": [{"type": "text", "text": "And its population?"}]},
        ],
    )
    workflow_id = first.json()["poweron"]["workflow"]
    message = await ChatMessage.objects.filter(workflow_id=workflow_id, role="user").afirst()
    assert message.content == (
        "Earlier in this conversation (sent with this message):\n\nSystem: Answer briefly."
        "\n\nUser: Capital of France?\n\nAssistant: Paris.\n\n---\n\nAnd its population?"
    )
    workflow = await ChatWorkflow.objects.aget(pk=workflow_id)
    assert workflow.title == "And its population?"
    second = await complete(
        openai_api,
        metadata={"workflow": str(workflow_id)},
        messages=[{"role": "user", "content": "Earlier text"}, {"role": "user", "content": "More"}],
    )
    assert (
        second.json()["poweron"] | {"round": 2, "workflow": workflow_id} == second.json()["poweron"]
    )
    users = [m async for m in ChatMessage.objects.filter(workflow_id=workflow_id, role="user")]
    assert [m.content for m in users][1:] == ["More"]


async def test_a_round_that_fails_says_so_first_and_does_not_finish_with_stop(
    openai_api, model, settings
):
    """The model cannot be reached: the answer's first line is the page's status line, the
    finish_reason is length, poweron.status failed."""
    model.add(*[FakeReply(status=500, error="down")] * 12)
    answered = await complete(openai_api, messages=[{"role": "user", "content": "Hello"}])
    assert answered.status_code == 200
    body = answered.json()
    content = body["choices"][0]["message"]["content"]
    assert content.splitlines()[0].startswith("**Failed** — ")
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["poweron"]["status"] == "failed"


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"messages": [{"role": "assistant", "content": "Hi"}]}, 400, "messages.0.role"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "text": None}]}]},
            400, "messages.0.content",
        ),
        ({"messages": [{"role": "user", "content": "  "}]}, 400, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "x" * 20_001}]}, 400, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "Hi"}], "n": 2}, 400, "n"),
        ({"messages": []}, 400, "messages"),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}, 404, "model"),
    ],
)  # fmt: skip
async def test_a_request_the_round_cannot_take_is_refused_with_nothing_stored(
    openai_api, body, status, param
):
    answered = await complete(openai_api, **body)
    assert answered.status_code == status, answered.content
    error = answered.json()["error"]
    assert error["param"] == param and error["message"]
    assert not await ChatWorkflow.objects.aexists()


async def test_refusals_before_the_round_are_openai_errors(alice, bob, openai_api, settings):
    """No key: 401; a key without `run`: 403; bob's workflow: the 404 of no workflow; a
    busy workflow: 409; past the rounds an hour: 429 with Retry-After, and the workflow made
    for it is gone again."""
    hello = {"messages": [{"role": "user", "content": "Hi"}]}
    anonymous = await complete(BearerAsyncClient(""), **hello)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["type"]
    reader = BearerAsyncClient(await database_sync_to_async(make_token)(alice, "read"))
    refused = await complete(reader, **hello)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "insufficient_scope"
    theirs = await database_sync_to_async(services.workflow_create)(owner=bob)
    for named in (theirs.pk, 10**9, "abc"):
        missing = await complete(openai_api, metadata={"workflow": named}, **hello)
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "workflow_not_found"
    mine = await database_sync_to_async(services.workflow_create)(owner=alice)
    await ChatWorkflow.objects.filter(pk=mine.pk).aupdate(status=ChatWorkflow.Status.RUNNING)
    busy = await complete(openai_api, metadata={"workflow": mine.pk}, **hello)
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "already_running"
    settings.POWERON_MAX_ROUNDS_PER_HOUR = 1
    await database_sync_to_async(services.message_create)(
        workflow=mine, role="user", content="the round of this hour", round=1
    )
    before = (await ChatWorkflow.objects.acount(), await ChatMessage.objects.acount())
    limited = await complete(openai_api, **hello)
    assert limited.status_code == 429 and int(limited["Retry-After"]) >= 1
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert (await ChatWorkflow.objects.acount(), await ChatMessage.objects.acount()) == before
