"""Prefix reuse on a local server: a llama.cpp server's slots are asked once, each family of
calls keeps its own slot with `cache_prompt`, and what the server reused and evaluated is
reported per call and on the step. The fake model server plays llama.cpp (its /props and a
prefix cache per slot); a server that is not llama.cpp, or a hosted one, gets nothing of it."""

from __future__ import annotations

from pydantic import BaseModel

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.support.replies import cont
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.slots import reuse_body, slot_for

PROMPT = [
    {"role": "system", "content": "You are PowerOn. " * 40},
    {"role": "user", "content": "## User request\nFind facts about PowerOn."},
]


class Answer(BaseModel):
    answer: str


def local(url: str, slots: int | str = "auto") -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(
        base_url=url, api_key="x", model="fake-model", max_retries=0, slots=slots
    )


def test_each_family_of_calls_has_its_slot_while_there_are_enough() -> None:
    """The calls that plan, choose and judge share slot 0; Stage 2, the answer and actions'
    own calls get the next ones, sharing the last when the server has fewer."""
    assert [slot_for(k, 4) for k in ("taskplan", "select", "refine", "review")] == [0, 0, 0, 0]
    assert [slot_for(k, 4) for k in ("parameters", "final", "ai.process")] == [1, 2, 3]
    assert [slot_for(k, 2) for k in ("refine", "parameters", "final", "ai.process")] == [0, 1, 1, 1]
    assert {slot_for(k, 1) for k in ("refine", "parameters", "final")} == {0}
    assert reuse_body("refine", 0) == {}


async def test_a_llama_cpp_server_is_asked_its_slots_once_and_calls_name_theirs(
    fake_openai_factory,
) -> None:
    """With slots "auto", the first call asks /props; every request then names its family's
    slot and asks the server to reuse the prompt's cached prefix."""
    server = fake_openai_factory([{"answer": "a"}, {"answer": "b"}, "text"], slots=2)
    async with local(server.url) as llm:
        await llm.complete(PROMPT, output=Answer, kind="select")
        await llm.complete(PROMPT, output=Answer, kind="parameters")
        await llm.complete_text(PROMPT, kind="final")
    assert server.gets == ["/props"]
    assert [(b["id_slot"], b["cache_prompt"]) for b in server.requests] == [
        (0, True),
        (1, True),
        (1, True),
    ]


async def test_what_the_server_reused_is_counted_as_cached(fake_openai_factory) -> None:
    """A second call with the same prefix on its slot: the server reports the prefix reused
    (llama.cpp's cached_tokens and timings), and the usage says so; the rest was evaluated."""
    server = fake_openai_factory([{"answer": "a"}, {"answer": "b"}], slots=1)
    async with local(server.url) as llm:
        first = await llm.complete(PROMPT, output=Answer, kind="select")
        again = [*PROMPT[:1], {"role": "user", "content": PROMPT[1]["content"] + " Now."}]
        second = await llm.complete(again, output=Answer, kind="refine")
    assert first.usage.cached_tokens == 0
    reused = server.reuse[1][2]
    assert reused > 0 and second.usage.cached_tokens == reused
    assert second.usage.prompt_tokens - second.usage.cached_tokens == server.reuse[1][1]


async def test_a_server_that_is_not_llama_cpp_gets_plain_requests(fake_openai_factory) -> None:
    """No /props (an OpenAI-compatible server of another kind): no slot, no cache_prompt."""
    server = fake_openai_factory([{"answer": "a"}])
    async with local(server.url) as llm:
        await llm.complete(PROMPT, output=Answer, kind="select")
    assert server.gets == ["/props"]
    assert "id_slot" not in server.requests[0] and "cache_prompt" not in server.requests[0]


async def test_without_slots_the_server_is_never_asked(fake_openai_factory) -> None:
    """Slots 0 (a hosted provider, or POWERON_LLM_SLOTS=off): nothing is asked or sent."""
    server = fake_openai_factory([{"answer": "a"}], slots=2)
    async with local(server.url, slots=0) as llm:
        await llm.complete(PROMPT, output=Answer, kind="select")
    assert server.gets == []
    assert "id_slot" not in server.requests[0]


async def test_a_step_reports_the_prompt_tokens_reused_and_evaluated(fake_openai_factory) -> None:
    """Through a round on a llama.cpp-like server with two slots: the second step's refine
    reuses the prefix its first refine left in slot 0, Stage 2's calls share slot 1, and the
    step's telemetry and its calls by kind say how much of their prompts was reused."""
    server = fake_openai_factory(
        [
            taskplan("Find facts about PowerOn", first=select()),
            params(query="PowerOn"),
            cont(next=select()),
            params(query="PowerOn chat"),
            stop(),
            "PowerOn is a chat.",
        ],
        slots=2,
    )
    async with local(server.url) as llm:
        events = await collect(make_state(), llm)
    server.assert_complete()
    assert [slot for slot, _, _ in server.reuse] == [0, 1, 0, 1, 0, 1]
    usage = of(events, "usage")
    assert [u.kind for u in usage] == [
        "taskplan",
        "parameters",
        "refine",
        "parameters",
        "refine",
        "final",
    ]
    assert all(
        u.cachedTokens == reused for u, (_, _, reused) in zip(usage, server.reuse, strict=True)
    )
    assert usage[2].cachedTokens > 0 and usage[4].cachedTokens > usage[2].cachedTokens / 2
    assert usage[3].cachedTokens > 0  # Stage 2's instructions, from the first Stage 2 call
    closed = [e for e in of(events, "step") if e.status != "started"]
    second = closed[1]
    assert second.promptTokens == usage[3].promptTokens + usage[4].promptTokens
    assert second.cachedTokens == usage[3].cachedTokens + usage[4].cachedTokens
    by_kind = {call.kind: call for call in second.calls}
    assert by_kind["refine"].cachedTokens == usage[4].cachedTokens
    assert by_kind["refine"].promptTokens == usage[4].promptTokens
