"""Narrow or stable call schemas, through the real openai client against the localhost fake
model server: narrow ones enumerate the documents that exist (for small local models); stable
ones stay the same across a task's calls, so a provider's prompt cache (which counts the
schema as the start of the prompt) holds, and references are checked after the answer."""

from __future__ import annotations

import json

import pytest

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.engine.test_integration_openai import schema_name

NOTES = "docList:round1_uploads"


def two_searches() -> list:
    """Two web searches, each producing a document: the second Stage 1 sees one more."""
    first = select("web.search", requiredInputDocuments=[NOTES])
    return [
        taskplan("Find facts"),
        first,
        params(query="PowerOn"),
        {"decision": "continue", "reason": "More.", "next": None},
        select("web.search"),
        params(query="PowerOn again"),
        stop(),
        "PowerOn is a chat.",
    ]


def stage_one_schemas(fake_openai) -> list[str]:
    return [
        json.dumps(body["response_format"], sort_keys=True)
        for body in fake_openai.requests
        if schema_name(body) == "ActionSelection"
    ]


@pytest.mark.parametrize("schemas", ["narrow", "stable"])
async def test_stage_one_schemas_follow_the_documents_only_when_narrow(
    fake_openai, llm, store, schemas
):
    fake_openai.add(*two_searches())
    events = await collect(make_state(schemas=schemas), llm, store=store)
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    first, second = stage_one_schemas(fake_openai)
    if schemas == "stable":
        assert first == second  # the cacheable start of both calls is the same
        assert NOTES not in first
    else:
        assert first != second  # the second lists the document the first search produced
        assert NOTES in first and NOTES in second


async def test_a_stable_schema_still_refuses_a_reference_that_does_not_exist(
    fake_openai, llm, store
):
    """Not enumerated in the schema, a reference is checked after the answer: a corrective
    retry names the valid ones."""
    fake_openai.add(
        taskplan("Find facts"),
        select("web.search", requiredInputDocuments=["docList:round9_nothing"]),
        select("web.search", requiredInputDocuments=[NOTES]),
        params(query="PowerOn"),
        stop(),
        "PowerOn is a chat.",
    )
    events = await collect(make_state(schemas="stable"), llm, store=store)
    fake_openai.assert_complete()
    errors = of(events, "error")
    assert errors and errors[0].kind == "reference" and errors[0].retrying
    retry = fake_openai.requests[2]["messages"][-1]["content"]
    assert NOTES in retry


def system_of(body) -> str:
    return body["messages"][0]["content"]


@pytest.mark.parametrize("schemas", ["narrow", "stable"])
async def test_for_a_cache_the_instruction_of_each_call_kind_ends_the_system_message(
    fake_openai, llm, store, schemas
):
    """With stable schemas (a hosted provider), each kind's "## Now" instruction moves from
    the end of the user message to the end of the system message: two rounds with different
    requests then send byte-identical system messages for each kind, and only a pointer stays
    after the request. Narrow schemas (a local server) move only how the answer is written
    (under "## Answer format"), and keep what to do now last, where a small model reads it."""
    for request in ("Find facts about PowerOn", "Look up the weather in Oslo"):
        fake_openai.add(taskplan(request), select("web.search"), params(query=request), stop())
        fake_openai.add(f"Answer to {request}.")
        state = make_state(schemas=schemas, prompt=request)
        events = await collect(state, llm, store=store)
        assert events[-1].status == "completed"
    fake_openai.assert_complete()
    by_kind: dict[str, list[dict]] = {}
    for body in fake_openai.requests:
        by_kind.setdefault(schema_name(body) or "text", []).append(body)
    for name in ("TaskPlan", "ActionSelection", "RefinementDecision"):
        first, second = by_kind[name]
        user = first["messages"][-1]["content"]
        if schemas == "stable":
            assert "## Now\n" in system_of(first) and system_of(first) == system_of(second)
            assert user.endswith('## Now\nAnswer as the system message says under "## Now".')
        else:
            assert "## Now" not in system_of(first) and system_of(first) == system_of(second)
            assert "## Answer format\nAnswer with one JSON object" in system_of(first)
            now = user.split("## Now\n")[1]
            assert "Answer with one JSON object" not in now
            assert now.endswith(
                'Write the answer as "## Answer format" in the system message says.'
            )


@pytest.mark.parametrize("kind", ["selection", "refinement", "answering refinement", "taskplan"])
def test_a_schema_that_names_the_documents_is_the_full_models_filled_in(kind: str) -> None:
    """A call whose schema enumerates the documents gets a stand-in model (the documents
    change at every step; building a model per step cost a few ms): its schema and its valid
    values are byte for byte those of the model built with the enumeration, it validates as
    that model without the enumeration (the host checks references after the answer), and
    the answer comes out as the plain model."""
    from workflows.engine.model import formats
    from workflows.engine.prompting import narrowed
    from workflows.engine.records import schemas

    actions, connections = ("web.search", "document.extract"), ("github",)
    many = tuple(f"docItem:{n}:a" for n in range(50))  # more than an enum shows
    for references in [(NOTES,), (NOTES, "docItem:7:notes.md"), many]:
        selection = narrowed._narrowed_selection(actions, references, connections)
        if kind == "selection":
            fast, full = narrowed.selection_output(actions, references, connections), selection
        elif kind == "taskplan":
            shape = (5, True, actions, references, connections, False, 0)
            fast, full = narrowed.taskplan_output(*shape), narrowed._taskplan.__wrapped__(*shape)
        else:
            answering = kind == "answering refinement"
            fast = narrowed.refinement_output(actions, references, connections, answering=answering)
            base = schemas.AnsweringRefinement if answering else schemas.RefinementDecision
            full = narrowed._narrowed(base, next=(selection | None, None))
        assert fast.__name__ == full.__name__
        for fmt in ("json_schema", "json_object"):
            assert json.dumps(formats.response_format(fast, fmt)) == json.dumps(
                formats.response_format.__wrapped__(full, fmt)
            )
        assert formats.valid_values(fast) == formats.valid_values.__wrapped__(full)
        assert f'"{references[-1]}"' in formats.valid_values(fast)
        answer: dict = {
            "action": "web.search",
            "actionObjective": "Look",
            "requiredInputDocuments": ["docList:elsewhere"],
        }
        if kind == "taskplan":
            task = {"objective": "Look", "successCriteria": ["Found."], "taskType": "research"}
            answer = {"overview": "Look.", "tasks": [task], "firstAction": answer}
        elif kind != "selection":
            answer = {"decision": "continue", "reason": "More.", "next": answer}
        value = narrowed.plain(fast.model_validate_json(json.dumps(answer)))
        assert type(value) is narrowed._PLAIN[full]  # the plain model
        chosen = {"selection": value, "taskplan": getattr(value, "firstAction", None)}.get(
            kind, getattr(value, "next", None)
        )
        assert chosen.requiredInputDocuments == ["docList:elsewhere"]  # checked by the host
