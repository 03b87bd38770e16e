"""The OpenAI-compatible client: JSON extraction, response formats, streaming, usage, retries."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeReply
from workflows.engine.model.formats import extract_json, strict_schema
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.prompting.narrowed import refinement_output
from workflows.engine.records.protocols import InvalidModelOutput, ModelUnavailable, Usage
from workflows.engine.records.schemas import ActionSelection, RefinementDecision, TaskReview

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u" * 400}]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        'Sure! Here it is:\n{"a": 1}\nHope that helps {really}.',
        '<think>{"a": 0} maybe</think>{"a": 1}',
        'Text {not json} then {"a": 1} trailing',
    ],
)
def test_json_is_extracted_from_fences_prose_and_trailing_text(text: str) -> None:
    assert extract_json(text) == {"a": 1}


def test_no_json_is_an_error() -> None:
    with pytest.raises(ValueError):
        extract_json("no braces here")


def test_strict_schemas_only_where_the_schema_allows() -> None:
    strict = strict_schema(RefinementDecision.model_json_schema())
    assert strict is not None
    assert set(strict["required"]) == {"decision", "reason", "criteriaMet", "next"}
    assert strict_schema(ActionSelection.model_json_schema()) is not None
    from workflows.engine.records.schemas import ActionParameters

    assert strict_schema(ActionParameters.model_json_schema()) is None  # free-form dict


_open: list[OpenAICompatibleLLM] = []


def client(url: str, **options) -> OpenAICompatibleLLM:
    llm = OpenAICompatibleLLM(base_url=url, api_key="sk-test", model="fake-model", **options)
    _open.append(llm)
    return llm


@pytest.fixture(autouse=True)
async def _close_clients():
    """Every client a test opens is closed with it."""
    yield
    while _open:
        await _open.pop().aclose()


async def test_structured_answers_ask_for_a_json_schema(fake_openai) -> None:
    fake_openai.add(FakeReply({"decision": "stop", "reason": "ok"}, usage={"cached_tokens": 7}))
    llm = client(fake_openai.url)
    completion = await llm.complete(MESSAGES, output=RefinementDecision, kind="refine")
    assert completion.value.decision == "stop"
    body = fake_openai.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "RefinementDecision"
    assert body["response_format"]["json_schema"]["strict"] is True
    usage = completion.usage
    assert usage.kind == "refine" and usage.prompt_tokens == 100 and usage.cached_tokens == 7
    assert usage.latency_ms >= 0
    fake_openai.assert_complete()


async def test_unsupported_json_schema_falls_back_to_json_object_and_remembers(
    fake_openai_factory,
) -> None:
    server = fake_openai_factory(
        ['{"status": "success"}', '{"status": "failed"}'], reject_json_schema=True
    )
    llm = client(server.url)
    first = await llm.complete(MESSAGES, output=TaskReview, kind="review")
    second = await llm.complete(MESSAGES, output=TaskReview, kind="review")
    assert (first.value.status, second.value.status) == ("success", "failed")
    kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert llm.response_format == "json_object"
    # A later run's model (a new instance for the same server and model) does not ask again.
    assert client(server.url).response_format == "json_object"
    assert client(server.url.replace("127.0.0.1", "localhost")).response_format == "json_schema"


async def test_no_response_format_at_all_falls_back_to_plain_text(fake_openai_factory) -> None:
    server = fake_openai_factory(
        ['Here you go: ```json\n{"status": "retry"}\n```'], reject_response_format=True
    )
    llm = client(server.url)
    completion = await llm.complete(MESSAGES, output=TaskReview, kind="review")
    assert completion.value.status == "retry"
    assert "response_format" not in server.requests[-1]
    assert llm.response_format == "text"


async def test_invalid_output_carries_the_message_raw_text_and_usage(fake_openai) -> None:
    fake_openai.add('{"status": "maybe"}')
    with pytest.raises(InvalidModelOutput) as caught:
        await client(fake_openai.url).complete(MESSAGES, output=TaskReview, kind="review")
    assert "status" in str(caught.value)
    assert caught.value.raw == '{"status": "maybe"}'
    assert caught.value.usage is not None and caught.value.usage.prompt_tokens == 100


FAST = {"retry-after-ms": "5"}
"""The SDK honours Retry-After: tests ask it to retry at once."""


async def test_transient_errors_are_retried_with_backoff(fake_openai) -> None:
    """The SDK's own retries take 5xx and 429 answers, waiting as the server asks."""
    fake_openai.add(
        FakeReply(status=503, error="busy", headers=FAST),
        FakeReply(status=429, error="slow", headers=FAST),
        "hi",
    )
    text = await client(fake_openai.url, max_retries=2).complete_text(MESSAGES, kind="final")
    assert text.text == "hi" and len(fake_openai.requests) == 3


async def test_the_last_failure_is_model_unavailable(fake_openai) -> None:
    fake_openai.add(*[FakeReply(status=500, error="down", headers=FAST)] * 2)
    with pytest.raises(ModelUnavailable) as caught:
        await client(fake_openai.url, max_retries=1).complete_text(MESSAGES, kind="final")
    fake_openai.assert_complete()
    assert caught.value.cause == "server"
    assert str(caught.value).startswith("The model server failed (500, tried 2 times).")
    assert "failed (500: down) (tried 2 times)" in caught.value.detail


async def test_an_unreachable_server_is_model_unavailable() -> None:
    """The failure says what happened in words for everyone (no address, no setting: they
    are asked to see the administrator); its detail, for staff, names the server and, with
    the host's advice, the setting to fix."""
    advice = {"unreachable": "Check POWERON_LLM_BASE_URL."}
    llm = client("http://127.0.0.1:9/v1", max_retries=0, advice=advice)
    with pytest.raises(ModelUnavailable) as caught:
        await llm.complete_text(MESSAGES, kind="final")
    assert str(caught.value) == (
        "The model could not be reached. Ask the administrator to check the model's settings "
        "and that its server runs."
    )
    assert caught.value.detail == (
        "The model server at 127.0.0.1:9 could not be reached. Check POWERON_LLM_BASE_URL."
    )
    assert caught.value.cause == "unreachable"


@pytest.mark.parametrize(
    ("status", "cause", "says"),
    [
        (401, "auth", "refused the API key (401)"),
        (404, "model", "does not serve the model 'fake-model' (404)"),
        (422, "refused", "refused the request (422: bad things)"),
    ],
)
async def test_refusals_say_what_to_fix(fake_openai, status, cause, says) -> None:
    """A refusal is one readable sentence, the advice for its cause after it (for staff, in
    its detail; everyone is asked to see the administrator); no retries."""
    fake_openai.add(FakeReply(status=status, error="bad things"))
    llm = client(fake_openai.url, advice={cause: f"Fix the {cause}."})
    with pytest.raises(ModelUnavailable) as caught:
        await llm.complete_text(MESSAGES, kind="final")
    assert caught.value.cause == cause
    detail = caught.value.detail
    assert says in detail and detail.endswith(f"Fix the {cause}.")
    plain = str(caught.value)
    assert f"({status})" in plain and plain.endswith(
        "Ask the administrator to check the model's settings."
    )
    assert "bad things" not in plain and "fake-model" not in plain and "127.0.0.1" not in plain
    fake_openai.assert_complete()


async def test_invalid_output_is_described_without_links(fake_openai) -> None:
    """Validation problems read as `field: problem`, without pydantic's documentation URLs."""
    fake_openai.add('{"decision": "perhaps"}')
    with pytest.raises(InvalidModelOutput) as caught:
        await client(fake_openai.url).complete(MESSAGES, output=RefinementDecision, kind="refine")
    assert str(caught.value).startswith("decision: Input should be 'continue' or 'stop'")
    assert "errors.pydantic.dev" not in str(caught.value)


async def test_streaming_yields_deltas_then_usage(fake_openai) -> None:
    fake_openai.add(FakeReply("PowerOn streams every word.", usage={"cached_tokens": 3}))
    pieces = [p async for p in client(fake_openai.url).stream_text(MESSAGES, kind="final")]
    *texts, usage = pieces
    assert "".join(texts) == "PowerOn streams every word." and len(texts) > 1
    assert isinstance(usage, Usage) and usage.kind == "final"
    assert usage.prompt_tokens == 100 and usage.cached_tokens == 3
    assert fake_openai.requests[0]["stream_options"] == {"include_usage": True}


async def test_a_stream_without_usage_is_estimated(fake_openai, monkeypatch) -> None:
    fake_openai.add("Twelve chars")
    llm = client(fake_openai.url)
    llm.stream_usage = False  # the server then sends no usage chunk
    pieces = [p async for p in llm.stream_text(MESSAGES, kind="final")]
    usage = pieces[-1]
    assert isinstance(usage, Usage) and usage.prompt_tokens == 100 and usage.completion_tokens == 3
    assert "stream_options" not in fake_openai.requests[0]


async def test_a_structured_answer_streams_its_answer_field_as_it_arrives(fake_openai) -> None:
    """Refine's decision with the answer inside: with on_answer the request streams, the
    answer's characters come out decoded while the JSON arrives, and the whole reply is
    validated as without streaming."""
    answer = 'The "report" is ready:\n- one\n- two — done 😀'
    decision = {"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": answer}
    fake_openai.add(FakeReply(decision, usage={"cached_tokens": 3}))
    pieces: list[str] = []

    async def collect(piece: str) -> None:
        pieces.append(piece)

    output = refinement_output(("web.search",), None, (), answering=True)
    done = await client(fake_openai.url).complete(
        MESSAGES, output=output, kind="refine", on_answer=collect
    )
    assert "".join(pieces) == answer and len(pieces) > 3
    assert done.value.answer == answer and done.value.decision == "stop"
    assert done.usage.kind == "refine" and done.usage.cached_tokens == 3
    request = fake_openai.requests[0]
    assert request["stream"] is True and request["response_format"]["type"] == "json_schema"


async def test_a_streamed_structured_answer_cut_off_at_its_limit_says_so(fake_openai) -> None:
    fake_openai.add(FakeReply('{"decision": "stop", "answer": "Half of it', finish_reason="length"))
    pieces: list[str] = []

    async def collect(piece: str) -> None:
        pieces.append(piece)

    output = refinement_output((), None, (), answering=True)
    with pytest.raises(InvalidModelOutput, match="cut off") as caught:
        await client(fake_openai.url).complete(
            MESSAGES, output=output, kind="refine", on_answer=collect
        )
    assert caught.value.cause == "cut_off" and "".join(pieces) == "Half of it"


async def test_remote_servers_are_refused_in_tests() -> None:
    with pytest.raises(RuntimeError, match="disabled"):
        await client("https://api.openai.com/v1").complete_text(MESSAGES, kind="final")


async def test_warming_the_client_sends_nothing_and_leaves_the_client_as_it_was(
    fake_openai, caplog
):
    """warm() rehearses a structured call, plain and streamed, through the SDK without a
    request, and logs none (an operator would read it as a call to the model); the client
    then calls the real server as before, and its request is logged as always."""
    import logging
    import sys

    caplog.set_level(logging.INFO)
    fake_openai.add(FakeReply({"decision": "stop", "reason": "real"}))
    llm = client(fake_openai.url)
    await llm.warm()
    assert "openai.resources.chat.completions" in sys.modules
    assert fake_openai.requests == []
    assert not [r for r in caplog.records if "HTTP Request" in r.getMessage()]
    answer = await llm.complete(MESSAGES, output=RefinementDecision, kind="refine")
    assert answer.value.reason == "real" and len(fake_openai.requests) == 1
    assert [r for r in caplog.records if "HTTP Request" in r.getMessage()]
