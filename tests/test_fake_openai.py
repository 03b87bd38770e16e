"""The fake model server answers the real openai client exactly as scripted."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel

from tests.support.fake_openai import EXHAUSTED, FakeOpenAIServer, FakeReply

ROOT = Path(__file__).resolve().parent.parent
USER = [{"role": "user", "content": "x" * 40}]


class Answer(BaseModel):
    answer: int


@pytest.fixture
def client(fake_openai):
    with openai.OpenAI(base_url=fake_openai.url, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
async def aclient(fake_openai):
    async with openai.AsyncOpenAI(
        base_url=fake_openai.url, api_key="sk-test", max_retries=0
    ) as client:
        yield client


def test_url_is_loopback_v1(fake_openai):
    """The base URL is http://127.0.0.1:<port>/v1."""
    assert fake_openai.url == f"http://127.0.0.1:{fake_openai.port}/v1"


def test_sync_client_gets_scripted_content(fake_openai, client):
    """A plain string reply is the assistant message content."""
    fake_openai.add("Hello there.")
    response = client.chat.completions.create(model="m", messages=USER)
    choice = response.choices[0]
    assert (choice.message.role, choice.message.content) == ("assistant", "Hello there.")
    assert choice.finish_reason == "stop"
    assert response.object == "chat.completion"
    assert response.model == "m"


async def test_async_client_gets_scripted_content(fake_openai, aclient):
    """The async client gets the same answer over the same wire."""
    fake_openai.add("Hello async.")
    response = await aclient.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "Hello async."


def test_dict_and_model_replies_are_json_content(fake_openai, client):
    """Dicts and pydantic models are sent as their JSON serialisation."""
    fake_openai.add({"answer": 1}, Answer(answer=2))
    first = client.chat.completions.create(model="m", messages=USER)
    second = client.chat.completions.create(model="m", messages=USER)
    assert Answer.model_validate_json(first.choices[0].message.content).answer == 1
    assert Answer.model_validate_json(second.choices[0].message.content).answer == 2


def test_usage_counts_characters_over_four(fake_openai, client):
    """Prompt tokens are message characters // 4, completion tokens reply characters // 4."""
    fake_openai.add("y" * 21)
    messages = [{"role": "system", "content": "s" * 8}, *USER]
    usage = client.chat.completions.create(model="m", messages=messages).usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 5, 17)
    assert usage.prompt_tokens_details.cached_tokens == 0


def test_explicit_usage_overrides_the_counts(fake_openai, client):
    """FakeReply.usage sets prompt, completion and cached tokens; the total follows."""
    fake_openai.add(FakeReply("ok", usage={"prompt_tokens": 100, "cached_tokens": 64}))
    usage = client.chat.completions.create(model="m", messages=USER).usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (100, 0, 100)
    assert usage.prompt_tokens_details.cached_tokens == 64


def test_stream_joins_to_the_script_with_a_usage_chunk(fake_openai, client):
    """Streamed deltas come one per word, join to the content, and end with usage."""
    text = "Plan  the work,\nthen act. "
    fake_openai.add(text)
    chunks = list(
        client.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    deltas = [
        c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content
    ]
    assert "".join(deltas) == text
    assert deltas == ["Plan  ", "the ", "work,\n", "then ", "act. "]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == len(text) // 4


def test_stream_without_include_usage_has_no_usage(fake_openai, client):
    """Without stream_options.include_usage no chunk carries usage."""
    fake_openai.add("one two")
    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))
    assert all(chunk.usage is None and chunk.choices for chunk in chunks)


def test_stream_chunks_arrive_as_they_are_sent(fake_openai):
    """Chunks are not buffered: the first arrives while the next is still being delayed."""
    fake_openai.add(FakeReply("never fully sent", chunk_delay=30))
    with openai.OpenAI(base_url=fake_openai.url, api_key="k", max_retries=0, timeout=5) as c:
        with c.chat.completions.create(model="m", messages=USER, stream=True) as stream:
            first = next(iter(stream))
        assert first.choices[0].delta.role == "assistant"


async def test_async_stream_joins_to_the_script(fake_openai, aclient):
    """The async client streams the same deltas."""
    fake_openai.add("streamed to the event loop")
    stream = await aclient.chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    text = ""
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    assert text == "streamed to the event loop"
    assert chunk.usage is not None


def test_json_schema_is_accepted_and_recorded(fake_openai, client):
    """A json_schema response_format is answered and kept in the recorded request."""
    fake_openai.add({"answer": 42})
    response = client.chat.completions.parse(model="m", messages=USER, response_format=Answer)
    assert response.choices[0].message.parsed == Answer(answer=42)
    response_format = fake_openai.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Answer"


def test_json_object_is_accepted(fake_openai, client):
    """A json_object response_format is answered too."""
    fake_openai.add({"answer": 1})
    fmt = {"type": "json_object"}
    response = client.chat.completions.create(model="m", messages=USER, response_format=fmt)
    assert response.choices[0].message.content == '{"answer": 1}'


def test_reject_json_schema_gives_bad_request(fake_openai_factory):
    """With reject_json_schema a json_schema request is a 400 naming response_format."""
    server = fake_openai_factory(["unused"], reject_json_schema=True)
    with (
        openai.OpenAI(base_url=server.url, api_key="k", max_retries=0) as client,
        pytest.raises(openai.BadRequestError) as error,
    ):
        client.chat.completions.parse(model="m", messages=USER, response_format=Answer)
    assert "response_format" in error.value.message
    assert error.value.body["param"] == "response_format"
    assert len(server.requests) == 1
    assert server.remaining == 1


def test_reject_json_schema_still_answers_json_object(fake_openai_factory):
    """A client falling back to json_object gets the scripted reply."""
    server = fake_openai_factory([{"answer": 3}], reject_json_schema=True)
    with openai.OpenAI(base_url=server.url, api_key="k", max_retries=0) as client:
        fmt = {"type": "json_object"}
        response = client.chat.completions.create(model="m", messages=USER, response_format=fmt)
    assert response.choices[0].message.content == '{"answer": 3}'


def test_reject_response_format_rejects_any_format(fake_openai_factory):
    """With reject_response_format even json_object is a 400."""
    server = fake_openai_factory(["unused"], reject_response_format=True)
    with (
        openai.OpenAI(base_url=server.url, api_key="k", max_retries=0) as client,
        pytest.raises(openai.BadRequestError),
    ):
        fmt = {"type": "json_object"}
        client.chat.completions.create(model="m", messages=USER, response_format=fmt)


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_error_replies_map_to_openai_exceptions(fake_openai, client, status, exception):
    """An error status raises the matching openai exception with the scripted message."""
    fake_openai.add(FakeReply(status=status, error="scripted failure"))
    with pytest.raises(exception) as error:
        client.chat.completions.create(model="m", messages=USER)
    assert error.value.status_code == status
    assert error.value.body["message"] == "scripted failure"


def test_retrying_client_consumes_one_reply_per_attempt(fake_openai):
    """The client's own retry of a 500 takes the next scripted reply."""
    fake_openai.add(FakeReply(status=500, headers={"retry-after-ms": "1"}), "recovered")
    with openai.OpenAI(base_url=fake_openai.url, api_key="k", max_retries=1) as client:
        response = client.chat.completions.create(model="m", messages=USER)
    assert response.choices[0].message.content == "recovered"
    fake_openai.assert_complete()


def test_requests_are_recorded_in_order(fake_openai, client):
    """Every request body is recorded, in order, with its headers."""
    fake_openai.add("a", "b")
    for word in ("first", "second"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": word}])
    assert [r["messages"][0]["content"] for r in fake_openai.requests] == ["first", "second"]
    assert fake_openai.headers[0]["authorization"] == "Bearer sk-test"


def test_callable_reply_sees_the_request(fake_openai, client):
    """A callable reply is called with the request body and its result is the reply."""
    fake_openai.add(lambda body: body["messages"][-1]["content"].upper())
    response = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert response.choices[0].message.content == "HI"


def test_empty_script_fails_loudly(fake_openai):
    """A request past the end of the script gets a 500 saying so, even with retries on."""
    with (
        openai.OpenAI(base_url=fake_openai.url, api_key="k", max_retries=2) as client,
        pytest.raises(openai.InternalServerError, match=EXHAUSTED),
    ):
        client.chat.completions.create(model="m", messages=USER)
    assert len(fake_openai.requests) == 1
    with pytest.raises(AssertionError, match="after the script ran out"):
        fake_openai.assert_complete()


def test_assert_complete_fails_while_replies_remain(fake_openai, client):
    """assert_complete() fails until every scripted reply was requested."""
    fake_openai.add("used", "unused")
    client.chat.completions.create(model="m", messages=USER)
    with pytest.raises(AssertionError, match="1 scripted model replies were never requested"):
        fake_openai.assert_complete()
    client.chat.completions.create(model="m", messages=USER)
    fake_openai.assert_complete()


def test_slow_reply_times_the_client_out(fake_openai):
    """A delay longer than the client timeout raises APITimeoutError; stop() is not held up."""
    fake_openai.add(FakeReply("late", delay=30))
    with (
        openai.OpenAI(base_url=fake_openai.url, api_key="k", max_retries=0, timeout=0.2) as c,
        pytest.raises(openai.APITimeoutError),
    ):
        c.chat.completions.create(model="m", messages=USER)


def test_models_are_listed(client):
    """GET /models lists one model."""
    assert [model.id for model in client.models.list()] == ["fake-model"]


def test_stop_ends_every_thread():
    """After stop() no server or handler thread is left running."""
    before = set(threading.enumerate())
    with FakeOpenAIServer(["hi"]) as server:
        # An idle keep-alive connection must not keep its handler thread alive.
        with openai.OpenAI(base_url=server.url, api_key="k", max_retries=0) as client:
            client.chat.completions.create(model="m", messages=USER)
            server.stop()
        assert set(threading.enumerate()) - before == set()


def test_importable_from_a_standalone_script():
    """A benchmark script with the repo root on sys.path can run the server."""
    script = (
        "import openai\n"
        "from tests.support.fake_openai import FakeOpenAIServer\n"
        "with FakeOpenAIServer(['pong']) as s:\n"
        "    with openai.OpenAI(base_url=s.url, api_key='k', max_retries=0) as c:\n"
        "        r = c.chat.completions.create(model='m', messages=[])\n"
        "    print(r.choices[0].message.content)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "pong\n", "")


def test_default_client_cannot_reach_a_model():
    """The plugin points the environment's default client at a closed loopback port."""
    assert os.environ["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert "POWERON_LLM_BASE_URL" not in os.environ
    with openai.OpenAI(max_retries=0) as client, pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=USER)


def test_django_model_settings_are_blank(settings):
    """The app's model settings are blank in tests, so it falls back to the demo model."""
    assert settings.POWERON_LLM_BASE_URL == ""
    assert settings.POWERON_LLM_API_KEY == ""
