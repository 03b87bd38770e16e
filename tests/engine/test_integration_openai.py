"""Whole rounds through the real openai client against the localhost fake model server."""

from __future__ import annotations

import os

from tests.engine.conftest import collect, make_state, of, params, review, select, stop, taskplan
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.prompting.prompts import ANSWER_FORMAT
from workflows.engine.records.state import ConnectionInfo, HistoryEntry
from workflows.engine.testing import MemoryStore

HISTORY = [HistoryEntry(role="user", round=1, content="HISTORY-MARKER from an earlier message")]
CONNECTIONS = [ConnectionInfo(label="conn-marker", kind="tavily")]


def schema_name(body: dict) -> str | None:
    fmt = body.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name")


def text_of(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"])


async def test_a_react_round_keeps_stage_two_minimal(fake_openai, llm, store) -> None:
    """Stage 2 bodies hold no documents, connections or history; Stage 1 asks no values."""
    fake_openai.add(
        taskplan("Find facts"),
        select(requiredInputDocuments=["docList:round1_uploads"], requiredConnection="conn-marker"),
        params(query="PowerOn"),
        stop(),
        "PowerOn is a chat.",
    )
    state = make_state(history=HISTORY, connections=CONNECTIONS)
    events = await collect(state, llm, store=store)
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    assert of(events, "message")[-1].content == "PowerOn is a chat."

    bodies = {schema_name(b): b for b in fake_openai.requests if schema_name(b)}
    stage1, stage2 = bodies["ActionSelection"], bodies["ActionParameters"]
    stage1_schema = stage1["response_format"]["json_schema"]["schema"]
    assert "parameters" not in stage1_schema["properties"]
    assert "docList:round1_uploads" in text_of(stage1) and "HISTORY-MARKER" in text_of(stage1)
    assert "Give no parameter values here" in text_of(stage1)
    stage2_text = text_of(stage2)
    for leaked in ["docList", "docItem", "notes.txt", "conn-marker", "HISTORY-MARKER"]:
        assert leaked not in stage2_text
    assert "SELECTED_ACTION: web.search" in stage2_text
    assert fake_openai.requests[-1]["stream"] is True
    usage = of(events, "usage")
    assert [u.kind for u in usage] == [
        "taskplan",
        "select",
        "parameters",
        "refine",
        "final",
    ]
    assert all(u.promptTokens > 0 for u in usage)


async def test_prompts_share_a_stable_prefix_across_calls_and_runs(fake_openai, llm) -> None:
    """Providers cache a prompt's prefix: every call that chooses actions starts with the same
    system message (rules and catalog), then how its kind's answer is written, in every run;
    Stage 2 sends no system message, the answer its own, opening with a fixed line, before the
    user's words; within a step's calls the user message changes only after the task's part."""
    for _ in range(2):
        fake_openai.add(taskplan("t"), select(), params(query="q"), stop(), "ok")
        await collect(make_state(), llm)
    structured = [b for b in fake_openai.requests if schema_name(b)]
    systems = [
        b["messages"][0]["content"] for b in structured if b["messages"][0]["role"] == "system"
    ]
    heads = {system.partition(ANSWER_FORMAT)[0] for system in systems}
    assert len(heads) == 1 and "## Catalog" in next(iter(heads))
    kinds = {(schema_name(b), b["messages"][0]["content"]) for b in structured}
    assert len(kinds) == len({schema_name(b) for b in structured})  # per kind, one system
    answers = [b["messages"] for b in fake_openai.requests if not schema_name(b)]
    assert len(answers) == 2 and all([m["role"] for m in a] == ["system", "user"] for a in answers)
    assert answers[0][0]["content"].startswith("You are PowerOn")
    stage2 = [b for b in fake_openai.requests if schema_name(b) == "ActionParameters"]
    assert stage2 and all(b["messages"][0]["role"] == "user" for b in stage2)
    by_kind = {schema_name(b): b["messages"][-1]["content"] for b in fake_openai.requests[:5]}
    select_text, refine_text = by_kind["ActionSelection"], by_kind["RefinementDecision"]
    shared = len(os.path.commonprefix([select_text, refine_text]))
    assert select_text[:shared].endswith("## Steps so far in this task\n")
    assert "## Now" in select_text[shared:] and select_text.index("## Now") > shared


async def test_an_actionplan_round(fake_openai, llm, store) -> None:
    fake_openai.add(
        taskplan("t"),
        {
            "actions": [
                {"action": "document.extract", "requiredInputDocuments": ["docList:round1_uploads"],
                 "parameters": {"aiPrompt": "key points"}, "resultLabel": "extract"},
            ]
        },
        review(),
        "Extracted.",
    )  # fmt: skip
    events = await collect(make_state(mode="actionplan", connections=CONNECTIONS), llm, store=store)
    fake_openai.assert_complete()
    assert of(events, "document")[0].document.label == "round1_task1_action1_extract"
    assert events[-1].status == "completed"


async def test_a_reasoning_round(fake_openai, llm) -> None:
    fake_openai.add(
        {"current_thinking": "Plan.", "planning": [{"description": "s"}],
         "next_thought_needed": True},
        {"current_thinking": "42.", "planning": [{"description": "s", "status": "Done"}],
         "next_thought_needed": False},
    )  # fmt: skip
    events = await collect(make_state(mode="reasoning"), llm, store=MemoryStore())
    fake_openai.assert_complete()
    assert [schema_name(b) for b in fake_openai.requests] == ["Thought", "Thought"]
    assert of(events, "message")[-1].content == "42."


async def test_a_server_without_json_schema_still_runs_the_round(fake_openai_factory) -> None:
    server = fake_openai_factory(
        [taskplan("t"), select(), params(query="q"), stop(), "ok"],
        reject_json_schema=True,
    )
    async with OpenAICompatibleLLM(
        base_url=server.url, api_key="sk-test", model="m", max_retries=0
    ) as client:
        events = await collect(make_state(), client)
    server.assert_complete()
    assert events[-1].status == "completed"
    assert not of(events, "error")


async def test_cached_prompt_tokens_are_counted_per_step_and_round(fake_openai, llm) -> None:
    """The provider's cached_tokens reach the usage events, the step's telemetry and the
    round's total."""
    from tests.support.fake_openai import FakeReply

    fake_openai.add(
        FakeReply(taskplan("t"), usage={"cached_tokens": 0}),
        FakeReply(select(), usage={"cached_tokens": 128}),
        FakeReply(params(query="q"), usage={"cached_tokens": 0}),
        FakeReply(stop(), usage={"cached_tokens": 256}),
        "ok",
    )
    events = await collect(make_state(), llm)
    assert [u.cachedTokens for u in of(events, "usage")][:4] == [0, 128, 0, 256]
    closed = [s for s in of(events, "step") if s.status != "started"][0]
    assert closed.cachedTokens == 384 and closed.tokens > closed.cachedTokens
    assert events[-1].type == "round" and events[-1].cachedTokens == 384
