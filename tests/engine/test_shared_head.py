"""The shared head for a hosted provider (schemas "shared"), through the real openai client
against the localhost fake model server: every call that plans, chooses or judges sends the
same system message and no schema, so one cached prefix serves them all; answers are compact
and leave out empty keys; the answer to the user follows the JSON as plain text."""

from __future__ import annotations

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.engine.test_integration_openai import schema_name
from workflows.engine.prompting.shared import ANSWER_AFTER

ANSWER = 'The notes say: "PowerOn is a web chat".\n\n- It runs a loop.\n- Steps stream live.'
"""An answer whose quotes, line breaks and list would all be escaped inside a JSON string."""


def kind_of(body: dict) -> str:
    """What a request is, read from its last line: the shared head's "## Now" names it."""
    if schema_name(body) == "ActionParameters":
        return "parameters"
    if body.get("stream") and body.get("response_format") is None:
        last = body["messages"][-1]["content"]
        return (
            "refine" if "(### Refine)" in last else "review" if "(### Review)" in last else "final"
        )
    now = body["messages"][-1]["content"].rsplit("## Now\n", 1)[-1]
    for kind, marker in [
        ("taskplan", "(### Task plan)"),
        ("select", "(### Action)"),
        ("refine", "(### Refine)"),
        ("review", "(### Review)"),
        ("actionplan", "(### Action plan)"),
    ]:
        if marker in now:
            return kind
    return "other"


def react_round(request: str) -> list:
    """A one-task React round: a search whose Stage 2 sets the query, refine continuing with a
    second search, then a stop that carries the answer after its JSON."""
    return [
        taskplan(request),
        select("web.search"),
        params(query=request),
        {"decision": "continue", "reason": "One more.", "next": select("web.scrape")},
        params(query=request),
        '{"decision":"stop","reason":"Done.","criteriaMet":true}\n' + ANSWER,
    ]


async def test_every_call_that_plans_chooses_or_judges_shares_one_head(fake_openai, llm, store):
    """Task plans, Stage 1, refine, reviews and action plans of two React rounds with different
    requests and an Actionplan round send one byte-identical system message and no schema
    (a JSON object, or plain text when the answer follows); Stage 2 keeps its action's schema
    and no system message; each call's own instruction is its last line."""
    for request in ("Find facts about PowerOn", "Look up the weather in Oslo"):
        fake_openai.add(*react_round(request))
        events = await collect(make_state(schemas="shared", prompt=request), llm, store=store)
        assert events[-1].status == "completed"
    planned = {"action": "web.search", "actionObjective": "Search.", "resultLabel": "found"}
    fake_openai.add(
        {"tasks": [{"objective": "Find", "successCriteria": ["Found."]}], "plan": None},
        {"actions": [{**planned, "parameters": {"query": "PowerOn"}}]},
        '{"status":"success","reason":"Found."}\nPowerOn is a chat.',
    )
    state = make_state(schemas="shared", mode="actionplan", prompt="Find facts")
    events = await collect(state, llm, store=store)
    assert events[-1].status == "completed"
    fake_openai.assert_complete()

    heads: dict[str, set[str]] = {}
    for body in fake_openai.requests:
        kind = kind_of(body)
        if kind == "parameters":
            assert body["response_format"]["json_schema"]["strict"] is True
            assert [m["role"] for m in body["messages"]] == ["user"]
            continue
        assert schema_name(body) is None  # nothing kind-specific ahead of the system message
        heads.setdefault(kind, set()).add(body["messages"][0]["content"])
    assert {"taskplan", "select", "refine", "review", "actionplan"} <= set(heads)
    assert len(set().union(*heads.values())) == 1  # one head for every kind, round and mode
    (head,) = heads["taskplan"]
    assert "## Catalog" in head and "### Refine" in head and "### Action plan" in head
    assert "compact JSON object" in head and "leaving out keys" in head


async def test_the_answer_follows_the_json_as_plain_text(fake_openai, llm, store):
    """Refine's stop writes the answer after its JSON, unescaped; the request asks for it in
    "## Now" and sends no response format; the answer streams as it is written and is the
    round's answer as written."""
    fake_openai.add(*react_round("Find facts about PowerOn"))
    events = await collect(make_state(schemas="shared"), llm, store=store)
    fake_openai.assert_complete()
    last = fake_openai.requests[-1]
    assert last["stream"] is True and "response_format" not in last
    assert last["messages"][-1]["content"].endswith(f"{ANSWER_AFTER} (### Answer to the user).")
    answer = of(events, "message")[-1]
    written, note = answer.content[: len(ANSWER)], answer.content[len(ANSWER) :]
    assert answer.role == "assistant" and written == ANSWER
    assert note.startswith("\n\n> Checked against the sources: 1 of 1 sentence is supported")
    streamed = "".join(d.text for d in of(events, "delta") if d.key == answer.key)
    assert streamed == answer.content  # as written, then the host's note
    assert len(fake_openai.requests) == 6  # no call of its own for the answer


async def test_an_answer_left_inside_the_json_is_taken_too(fake_openai, llm, store):
    """A model that writes the answer as a JSON key anyway is understood as well."""
    fake_openai.add(
        taskplan("Find facts"), select("web.search"), params(query="q"),
        {**stop(), "answer": "Inside the JSON."},
    )  # fmt: skip
    events = await collect(make_state(schemas="shared"), llm, store=store)
    fake_openai.assert_complete()
    assert of(events, "message")[-1].content == "Inside the JSON."


async def test_answers_that_leave_out_every_optional_key_are_taken(fake_openai, llm, store):
    """Compact answers with only the keys that matter (no empty lists, nulls or false, no
    overview, no parametersContext without parametersSchema) are valid: a one-task round
    runs on them, and the non-answering calls ask for a JSON object."""
    fake_openai.add(
        {"tasks": [{"objective": "Read the notes", "successCriteria": ["Read."]}],
         "firstAction": {"action": "document.extract", "actionObjective": "Read.",
                         "requiredInputDocuments": ["docList:round1_uploads"]}},
        '{"decision":"stop","reason":"Read.","criteriaMet":true}\nThe notes are read.',
    )  # fmt: skip
    events = await collect(make_state(schemas="shared"), llm, store=store)
    fake_openai.assert_complete()
    assert events[-1].status == "completed"
    assert of(events, "message")[-1].content == "The notes are read."
    assert fake_openai.requests[0]["response_format"] == {"type": "json_object"}
    plan = of(events, "plan")[0].selection
    assert plan.parametersSchema.fields == [] and plan.parametersContext == ""
    user = fake_openai.requests[0]["messages"][-1]["content"]
    assert user.count("\n## Now\n") == 1 and user.endswith("the first action of task 1.")


async def test_sections_with_nothing_in_them_are_left_out(fake_openai, llm, store):
    """With the shared head an empty history, connections or learnings section is not sent
    (each call re-reads its user message at full price); a local model's prompt keeps them."""
    for schemas in ("shared", "narrow"):
        fake_openai.add(*react_round("Find facts about PowerOn"))
        if schemas == "narrow":  # its refine answers inside the JSON: this one has no answer
            fake_openai.add("The answer, in a call of its own.")
        events = await collect(make_state(schemas=schemas), llm, store=store)
        assert events[-1].status == "completed"
    shared, narrow = fake_openai.requests[:6], fake_openai.requests[6:]
    for body in shared:
        if kind_of(body) != "parameters":
            user = body["messages"][-1]["content"]
            assert "(none)" not in user and "## Connections" not in user
            assert "## User request" in user and "## Documents" in user
    assert "## Connections\n(none)" in narrow[0]["messages"][-1]["content"]
