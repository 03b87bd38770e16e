"""A model server that ignores `max_tokens` cannot make the app read without end: a streamed
reply is cut at `max_reply_bytes` with what came before kept, a reply read whole is refused
past eight times that, and the model's usage still counts what was read.

The fake model server here streams tens of megabytes where the call asked for a few thousand
tokens at most (the attack of issue 31: 30 MB into one answer)."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeReply
from workflows.engine.model.bounded import ReplyCap
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.prompting.narrowed import refinement_output
from workflows.engine.records.protocols import InvalidModelOutput, ModelUnavailable, Usage

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u" * 400}]
CAP = 64 * 1024
FLOOD = ("w" * 65_535 + " ") * 160  # 10 MiB in pieces of 64 KiB


def flooding_client(url: str) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(
        base_url=url, api_key="sk-test", model="fake-model", max_retries=2, max_reply_bytes=CAP
    )


async def test_a_streamed_answer_is_cut_at_the_limit_with_a_note(fake_openai) -> None:
    """10 MiB streamed into the answer: the text kept is the first 64 KiB, then a note that
    it was cut; the rest is never read (the connection is closed), and the usage counts the
    text kept."""
    fake_openai.add(FakeReply(FLOOD, chunk_delay=0.001))
    async with flooding_client(fake_openai.url) as llm:
        pieces = [p async for p in llm.stream_text(MESSAGES, kind="final")]
    *texts, usage = pieces
    text = "".join(texts)
    kept, _, note = text.partition("\n\n> Note from PowerOn:")
    assert kept == FLOOD[:CAP]
    assert "cut here, at 65,536 bytes (POWERON_LLM_MAX_REPLY_BYTES)" in note
    assert isinstance(usage, Usage) and usage.completion_tokens >= CAP // 4
    assert fake_openai.delivered == 0  # the server never got to send the whole reply


async def test_a_structured_reply_streamed_past_the_limit_is_cut_off(fake_openai) -> None:
    """Refine's answer streamed without end: the pieces handed on stop at the limit and the
    call fails as cut off (its tokens counted), so the loop's retry is a shorter prompt."""
    flood = '{"decision": "stop", "reason": "r", "criteriaMet": true, "answer": "' + FLOOD
    fake_openai.add(FakeReply(flood, chunk_delay=0.001))
    pieces: list[str] = []

    async def collect(piece: str) -> None:
        pieces.append(piece)

    output = refinement_output(("web.search",), None, (), answering=True)
    async with flooding_client(fake_openai.url) as llm:
        with pytest.raises(InvalidModelOutput) as failed:
            await llm.complete(MESSAGES, output=output, kind="refine", on_answer=collect)
    assert failed.value.cause == "cut_off"
    assert failed.value.usage is not None and failed.value.usage.completion_tokens > 0
    assert len("".join(pieces).encode()) <= CAP
    assert len(failed.value.raw.encode()) <= CAP


async def test_a_reply_read_whole_larger_than_its_bound_is_refused_once(fake_openai) -> None:
    """A structured reply of 10 MiB in one JSON body: refused after 8 x 64 KiB, said as too
    large (not as a connection error), and not asked again."""
    fake_openai.add(FakeReply({"decision": "stop", "reason": FLOOD, "criteriaMet": True}))
    output = refinement_output(("web.search",), None, (), answering=False)
    async with flooding_client(fake_openai.url) as llm:
        with pytest.raises(ModelUnavailable) as failed:
            await llm.complete(MESSAGES, output=output, kind="refine")
    assert failed.value.cause == "too_large"
    said = f"{failed.value} {getattr(failed.value, 'detail', '')}"  # for people, for staff
    assert "larger than" in said
    assert len(fake_openai.requests) == 1


async def test_a_plain_text_reply_read_whole_is_bounded_too(fake_openai) -> None:
    """An action's own call (ai.process) is read whole: bounded the same way."""
    fake_openai.add(FakeReply(FLOOD))
    async with flooding_client(fake_openai.url) as llm:
        with pytest.raises(ModelUnavailable, match="larger than"):
            await llm.complete_text(MESSAGES, kind="tool")


async def test_replies_within_the_limit_are_untouched(fake_openai) -> None:
    """An ordinary answer streams whole, without a note."""
    fake_openai.add(FakeReply("A short answer, well within the limit."))
    async with flooding_client(fake_openai.url) as llm:
        pieces = [p async for p in llm.stream_text(MESSAGES, kind="final")]
    assert "".join(p for p in pieces if isinstance(p, str)) == (
        "A short answer, well within the limit."
    )


@pytest.mark.parametrize(
    ("limit", "pieces", "kept"),
    [
        (4, ["abc", "def"], "abcd"),
        (3, ["ab", "é"], "ab"),  # never half a character
        (4, ["a😀", "b"], "a"),
    ],
)
def test_the_cap_cuts_at_a_character(limit, pieces, kept) -> None:
    """The cap keeps whole characters up to the byte limit."""
    cap = ReplyCap(limit)
    assert "".join(cap.take(piece) for piece in pieces) == kept and cap.cut
