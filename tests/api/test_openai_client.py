"""The official `openai` client, unchanged, against a real Daphne with the fake model server:
streaming and not, it gets PowerOn's answer with the round's usage, and the round it ran is
a round like any other (the page and admin show it)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.api.live_app import alice_token, sign_in
from tests.support.apps import AppProcesses, app_env
from tests.support.fake_openai import FakeOpenAIServer, FakeReply

CHAT_PLAN = json.dumps({"overview": "chat", "tasks": []})
ANSWER = "PowerOn plans tasks, runs actions and answers with what it found; " + " ".join(
    f"word{n}" for n in range(30)
)


@pytest.fixture
def model():
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def live(model, tmp_path):
    """A Daphne on its own database; its base URL, an OpenAI client with alice's `run`
    token, and an API client with her `read` token."""
    processes = AppProcesses(app_env(tmp_path, model.url), tmp_path)
    try:
        base = f"http://127.0.0.1:{processes.web()}"
        client = openai.OpenAI(
            base_url=f"{base}/v1", api_key=alice_token(base, ["run"]), max_retries=0
        )
        reader = httpx.Client(
            base_url=f"{base}/api/v1",
            timeout=60,
            headers={"Authorization": f"Bearer {alice_token(base, ['read'])}"},
        )
        with client, reader:
            yield base, client, reader
    finally:
        processes.stop()


def stored(reader: httpx.Client, workflow: int) -> tuple[str, dict[str, int]]:
    """The workflow's stored answer, and the tokens of its usage events."""
    answer = reader.get(f"/workflows/{workflow}/messages").json()["messages"][-1]
    assert answer["role"] == "assistant"
    events = reader.get(f"/workflows/{workflow}/events", params={"limit": 500}).json()["events"]
    usage = [e["payload"] for e in events if e["type"] == "usage"]
    tokens = {
        "prompt": sum(u["promptTokens"] for u in usage),
        "completion": sum(u["completionTokens"] for u in usage),
    }
    return answer["content"], tokens


def test_the_client_gets_the_rounds_answer_and_its_usage(live, model):
    """chat.completions.create, not streamed: the stored answer, finish_reason stop, the
    round's tokens as usage, and where the round is."""
    base, client, reader = live
    model.add(CHAT_PLAN, ANSWER)
    completion = client.chat.completions.create(
        model="poweron-react", messages=[{"role": "user", "content": "What can you do?"}]
    )
    where = completion.model_extra["poweron"]
    answer, tokens = stored(reader, where["workflow"])
    (choice,) = completion.choices
    assert choice.message.content == answer and answer.startswith(ANSWER)
    assert choice.finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (
        tokens["prompt"], tokens["completion"],
    )  # fmt: skip
    assert completion.usage.total_tokens > 0
    assert where["page"] == f"{base}/workflows/{where['workflow']}/"
    model.assert_complete()


def test_the_client_streams_the_answer_as_it_is_written(live, model):
    """stream=True: content chunks that add up to the stored answer, in several pieces, the
    finish and the usage chunk (include_usage)."""
    _, client, reader = live
    model.add(CHAT_PLAN, FakeReply(content=ANSWER, chunk_delay=0.03))
    chunks = list(
        client.chat.completions.create(
            model="poweron-react",
            messages=[{"role": "user", "content": "What can you do?"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    workflow = chunks[0].model_extra["poweron"]["workflow"]
    answer, tokens = stored(reader, workflow)
    assert text == answer
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 2
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    assert chunks[-1].usage.prompt_tokens == tokens["prompt"]
    assert chunks[-1].usage.completion_tokens == tokens["completion"]


def test_a_round_from_the_client_shows_in_the_page_and_admin(live, model):
    """The round is on the workflow's page and in admin like one sent from the page."""
    base, client, _ = live
    model.add(CHAT_PLAN, ANSWER)
    completion = client.chat.completions.create(
        model="poweron-react", messages=[{"role": "user", "content": "What can you do?"}]
    )
    workflow = completion.model_extra["poweron"]["workflow"]
    with httpx.Client(base_url=base, timeout=60) as browser:
        sign_in(browser)
        page = browser.get(f"/workflows/{workflow}/").text
        admin = browser.get(f"/admin/workflows/chatworkflow/{workflow}/change/").text
        listed = browser.get("/").text
    assert ANSWER[:40] in page and "What can you do?" in page
    assert "What can you do?" in admin and ANSWER[:40] in admin
    assert f"/workflows/{workflow}/" in listed  # in the sidebar


def test_the_clients_errors_are_openais(live):
    """A wrong key and an unknown model raise the client's own errors."""
    base, client, _ = live
    wrong = openai.OpenAI(base_url=f"{base}/v1", api_key="pon_wrong", max_retries=0)
    with wrong, pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
    assert missing.value.code == "model_not_found"
    assert [m.id for m in client.models.list()] == [
        "poweron-react", "poweron-actionplan", "poweron-reasoning",
    ]  # fmt: skip
