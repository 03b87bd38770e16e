"""The answer models a round's first calls need, built at start (warming.py): a round of the
prepared catalog then builds none, and generates no schema, through the real client."""

from __future__ import annotations

import pytest

from tests.engine.conftest import collect, make_state, select, stop, taskplan
from tests.support.fake_tools import FakeToolExecutor
from workflows.engine.model import formats, warming
from workflows.engine.prompting import narrowed
from workflows.engine.testing import MemoryStore

NOTES = "docList:round1_uploads"


def summary_round() -> list:
    """Plan a task, extract the upload (no parameters: no Stage 2), stop, answer."""
    extract = select(
        "document.extract", requiredInputDocuments=[NOTES], parametersSchema={"fields": []}
    )
    return [taskplan("Summarise the notes"), extract, stop(), "The notes say hello."]


def uploaded() -> MemoryStore:
    store = MemoryStore()
    store.add("notes.txt", "text/plain", b"Hello.", label="round1_uploads")
    return store


def forget_every_answer_model() -> None:
    """As in a process that has just started: no answer model built, no schema generated."""
    for module in (narrowed, formats):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models built (pydantic's create_model in narrowed) and schemas generated."""
    seen: list[str] = []
    create, compact = narrowed.create_model, formats.compact_schema

    def counted_create(name: str, *args, **kwargs):
        seen.append(f"model {name}")
        return create(name, *args, **kwargs)

    def counted_compact(schema):
        seen.append("schema")
        return compact(schema)

    monkeypatch.setattr(narrowed, "create_model", counted_create)
    monkeypatch.setattr(formats, "compact_schema", counted_compact)
    return seen


@pytest.mark.parametrize("schemas", ["narrow", "stable"])
async def test_a_round_of_the_prepared_catalog_builds_no_answer_model(
    fake_openai, llm, builds, schemas
):
    state = make_state(prompt="Summarise my notes.", schemas=schemas)
    tools = FakeToolExecutor()

    forget_every_answer_model()
    fake_openai.add(*summary_round())
    events = await collect(state, llm, tools=tools, store=uploaded())
    assert events[-1].status == "completed"
    assert any(seen.startswith("model") for seen in builds) and "schema" in builds

    forget_every_answer_model()
    prepared = warming.prepare_answers(
        tools,
        schemas=schemas,
        max_steps=state.max_steps,
        policy=state.policy,
        fmt=llm.response_format,
    )
    assert prepared >= 20  # both modes' task plans; Stage 1 and refine for every task type
    builds.clear()
    fake_openai.add(*summary_round())
    events = await collect(state, llm, tools=tools, store=uploaded())
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    assert builds == []


def test_a_task_plan_without_a_first_action_is_one_model_whatever_the_documents() -> None:
    """References are not in such an answer: new documents do not make a new model."""
    actions = ("web.search", "document.extract")
    for first, plan in ((False, 0), (False, 5)):
        models = {
            narrowed.taskplan_output(5, first, actions, references, (), False, plan)
            for references in [None, (NOTES,), (NOTES, "docItem:3:notes.md")]
        }
        assert len(models) == 1
