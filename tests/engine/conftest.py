"""Engine fixtures: a round state, the fake catalog, an in-memory store, reply builders."""

# The reply builders live in tests/support/replies.py and are re-exported for engine tests.

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.fake_tools import FakeToolExecutor
from tests.support.replies import cont, params, review, select, stop, taskplan
from workflows.engine.loop.controls import AutoControls
from workflows.engine.loop.round import run_round
from workflows.engine.model import transport
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.records.events import Event
from workflows.engine.records.state import RoundState
from workflows.engine.testing import MemoryStore, ScriptedLLM


@pytest.fixture
async def llm(fake_openai):
    """The real OpenAI-compatible client against the localhost fake model server."""
    async with OpenAICompatibleLLM(
        base_url=fake_openai.url, api_key="sk-test", model="fake-model", max_retries=0
    ) as client:
        yield client


@pytest.fixture(autouse=True)
def _local_models_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI-compatible client may only reach 127.0.0.1 in engine tests."""
    monkeypatch.setattr(transport, "ALLOW_REMOTE_MODEL_REQUESTS", False)


def make_state(**overrides: Any) -> RoundState:
    """A round state for one round of workflow 1."""
    values: dict[str, Any] = {"round": 1, "prompt": "Tell me about PowerOn."}
    values.update(overrides)
    return RoundState(**values)


@pytest.fixture
def store() -> MemoryStore:
    """A store holding one uploaded text document labelled round1_uploads."""
    memory = MemoryStore()
    memory.add(
        "notes.txt",
        "text/plain",
        b"PowerOn is a web chat. An agent solves tasks in a loop. Every step streams live.",
        label="round1_uploads",
    )
    return memory


@pytest.fixture
def tools() -> FakeToolExecutor:
    return FakeToolExecutor()


async def collect(
    state: RoundState,
    llm: Any,
    *,
    tools: FakeToolExecutor | None = None,
    store: MemoryStore | None = None,
    controls: Any = None,
    clock: Callable[[], float] | None = None,
) -> list[Event]:
    """Run a round to the end and return its events."""
    extra = {"clock": clock} if clock else {}
    return [
        event
        async for event in run_round(
            state,
            llm=llm,
            tools=tools or FakeToolExecutor(),
            store=store if store is not None else MemoryStore(),
            controls=controls or AutoControls(),
            **extra,
        )
    ]


def of(events: list[Event], kind: str) -> list[Any]:
    """The events of one type."""
    return [event for event in events if event.type == kind]


# --- Replies -----------------------------------------------------------------------------------


__all__ = ["cont", "params", "review", "select", "stop", "taskplan"]


def one_search_round(*, final: str = "PowerOn is a chat.") -> ScriptedLLM:
    """Task plan, one web.search step that meets the criteria, review, final answer."""
    return ScriptedLLM(
        [
            taskplan("Find facts about PowerOn"),
            select(),
            params(query="PowerOn"),
            stop(),
            final,
        ]
    )
