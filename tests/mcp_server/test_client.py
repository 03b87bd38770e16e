"""The official `mcp` Python client against /mcp on a real Daphne with the scripted model:
run_task end to end (a file sent in base64, the answer and the document it produced, a
progress line per phase, an approval asked by elicitation), the documented default without
elicitation, the 2026-07-28 protocol, a cancelled call stopping the round, and the
resources."""

from __future__ import annotations

import asyncio
import base64
import time

import mcp_types as types
import pytest

from tests.mcp_server.live import SLOW, connected
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.replies import cont, params, review, select, stop, taskplan

# Starting the package's app (several Django processes) is charged to the first test.
pytestmark = pytest.mark.timeout(300)

NOTES = "Solar power grew by 40 percent in 2023.\nWind farms produced steady power.\n"
SUMMARY = "Solar grew 40 percent in 2023; wind was steady."
ANSWER = "Here is the summary of your notes."
REJECTED = "ai.process was rejected by the user"
TOOLS = ["run_task", "list_workflows", "get_workflow", "stop_run"]


def summarising_round(model: FakeOpenAIServer, *, approved: bool = True) -> None:
    """One task: ai.process over the uploaded notes (approval asked after Stage 2), then the
    answer; or, rejected, the refinement and the review."""
    first = select(
        "ai.process",
        requiredInputDocuments=["docList:round1_upload"],
        parametersSchema={"fields": []},
    )
    model.add(taskplan("Summarise the notes", first=first), params(aiPrompt="Summarise"))
    if approved:
        model.add(SUMMARY, stop(), ANSWER)
    else:
        # Nothing succeeded: the host writes the answer (no call for it).
        model.add(stop(criteria_met=False, reason="Not approved."), review("failed"))


def notes_document() -> dict:
    return {"name": "notes.txt", "contentBase64": base64.b64encode(NOTES.encode()).decode()}


class Progress:
    """The progress messages a call received."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.lines.append(message or "")


async def test_run_task_answers_with_the_produced_document_and_a_line_per_phase(live, model):
    """A file sent inline is read by the round; the result is the answer, the document the
    action produced (embedded, and in the structured result), and progress said the step's
    plan, act, observe and refine in order. The approval came as an elicitation, accepted."""
    summarising_round(model)
    asked: list[types.ElicitRequestParams] = []

    async def approve(context, request):
        asked.append(request)
        return types.ElicitResult(action="accept", content={"approve": True})

    progress = Progress()
    async with connected(
        live.url, live.alice.tokens["read+run"], mode="legacy", elicitation_callback=approve
    ) as client:
        assert client.protocol_version == "2025-11-25"
        assert [tool.name for tool in (await client.list_tools()).tools] == TOOLS
        result = await client.call_tool(
            "run_task",
            {"task": "Summarise the attached notes", "documents": [notes_document()]},
            progress_callback=progress,
        )
    assert not result.is_error, result.content
    out = result.structured_content
    assert out["status"] == "completed" and out["answer"].startswith(ANSWER)
    assert result.content[0].text.startswith(ANSWER)
    (document,) = out["documents"]
    assert document["source"] == "produced" and document["round"] == 1
    embedded = [c for c in result.content if isinstance(c, types.EmbeddedResource)]
    assert [e.resource.uri for e in embedded] == [document["uri"]]
    assert SUMMARY in embedded[0].resource.text
    phases = [line.split(" · ")[1].split(":")[0] for line in progress.lines if " · " in line]
    assert phases == ["plan", "act", "observe", "refine"], progress.lines
    assert any("plan: ai.process" in line for line in progress.lines)
    assert len(asked) == 1 and "ai.process" in asked[0].message
    model.assert_complete()
    with live.api(live.alice.tokens["read"]) as api:  # a round like any other
        messages = api.get(f"/workflows/{out['workflow']}/messages").json()["messages"]
    assert messages[0]["content"] == "Summarise the attached notes"
    assert messages[-1]["content"] == out["answer"]


async def test_without_elicitation_an_approval_is_rejected(live, model):
    """A client that takes no elicitation gets the documented default: the action is
    rejected, and the round ends (failed: nothing succeeded) with the host's answer."""
    summarising_round(model, approved=False)
    async with connected(live.url, live.alice.tokens["run"], mode="legacy") as client:
        result = await client.call_tool(
            "run_task", {"task": "Summarise the notes", "documents": [notes_document()]}
        )
    out = result.structured_content
    assert result.is_error and out["status"] == "failed"
    assert REJECTED in out["answer"] and out["documents"] == []
    with live.api(live.alice.tokens["read"]) as api:
        events = api.get(f"/workflows/{out['workflow']}/events", params={"limit": 500}).json()
    approvals = [e["payload"]["status"] for e in events["events"] if e["type"] == "approval"]
    assert approvals == ["waiting", "rejected"]
    model.assert_complete()


async def test_the_2026_protocol_runs_a_task_with_progress(live, model):
    """The client's default negotiation picks 2026-07-28 (stateless requests): run_task
    still streams its progress and returns the answer; there is no elicitation, so the
    approval is rejected by default."""
    summarising_round(model, approved=False)
    progress = Progress()
    async with connected(live.url, live.alice.tokens["read+run"]) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool(
            "run_task",
            {"task": "Summarise the notes", "documents": [notes_document()]},
            progress_callback=progress,
        )
    assert REJECTED in result.structured_content["answer"]
    assert any("act: ai.process" in line for line in progress.lines), progress.lines
    model.assert_complete()


async def test_cancelling_the_call_stops_the_round(live, model):
    """While the model is answering Stage 2, the client cancels run_task: the round stops
    for good (the model call is cut, the workflow ends stopped) and nothing more is asked."""
    first = select("ai.process", parametersSchema={"fields": []})
    model.add(taskplan("Think long", first=first), FakeReply(params(aiPrompt="x"), delay=600))
    asked = len(model.requests)
    progress = Progress()
    async with connected(live.url, live.alice.tokens["read+run"], mode="legacy") as client:
        call = asyncio.create_task(
            client.call_tool("run_task", {"task": "Think long"}, progress_callback=progress)
        )
        await until(lambda: len(model.requests) >= asked + 2 and progress.lines)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        listed = await client.call_tool("list_workflows", {"limit": 1})
    workflow = listed.structured_content["workflows"][0]["id"]
    with live.api(live.alice.tokens["read"]) as api:
        await until(lambda: api.get(f"/workflows/{workflow}/run").json()["status"] == "stopped")
    assert len(model.requests) == asked + 2  # no call after the stop
    model.assert_complete()  # the cut reply was taken when its call came


async def test_resources_are_the_workflows_export_and_documents(live, model):
    """resources/list has each workflow's export and documents; reading them gives the
    Markdown transcript and the document's text; templates and completion name them."""
    async with connected(live.url, live.alice.tokens["read"], mode="legacy") as client:
        found = await client.call_tool("list_workflows", {"query": "attached"})
        workflows = found.structured_content
        first = workflows["workflows"][-1]["id"]
        detail = (await client.call_tool("get_workflow", {"workflow": first})).structured_content
        uris = [r.uri for r in (await client.list_resources()).resources]
        export = await client.read_resource(detail["export"])
        produced = [d for d in detail["documents"] if d["source"] == "produced"]
        document = await client.read_resource(produced[0]["uri"])
        templates = (await client.list_resource_templates()).resource_templates
        completion = await client.complete(
            types.ResourceTemplateReference(uri=templates[0].uri_template),
            {"name": "workflow", "value": str(first)[0]},
        )
    assert detail["export"] in uris and produced[0]["uri"] in uris
    assert export.contents[0].mime_type == "text/markdown"
    assert "Summarise the attached notes" in export.contents[0].text
    assert SUMMARY in document.contents[0].text
    assert [t.uri_template for t in templates] == [
        "poweron://workflows/{workflow}/export.md",
        "poweron://workflows/{workflow}/documents/{document}",
    ]
    assert str(first) in completion.completion.values


async def until(condition, timeout: float = SLOW) -> None:
    """Wait for a condition (checked in a thread: it may make blocking requests)."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, "the condition was not met in time"
        await asyncio.sleep(0.1)


async def test_the_step_limit_question_is_asked_by_elicitation(live, model):
    """At a workflow's step limit the question comes as an elicitation; answering 0 more
    steps stops the task with its work kept, and the round ends with its answer (failed:
    the task was cut short while more was needed)."""
    with live.api(live.alice.tokens["read+run"]) as api:
        made = api.post("/workflows", json={"title": "Short", "mode": "react", "maxSteps": 1})
    workflow = made.json()["id"]
    first = select("ai.process", parametersSchema={"fields": []})
    model.add(
        taskplan("Summarise in steps", first=first),
        params(aiPrompt="Summarise"),
        SUMMARY,
        cont("One more pass."),
        review("success"),  # the host makes it incomplete: cut short at the limit
        ANSWER,
    )
    asked: list[types.ElicitRequestParams] = []

    async def answer(context, request):
        asked.append(request)
        if "approve" in request.requested_schema["properties"]:
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="accept", content={"steps": 0})

    async with connected(
        live.url, live.alice.tokens["run"], mode="legacy", elicitation_callback=answer
    ) as client:
        result = await client.call_tool(
            "run_task", {"task": "Summarise in steps", "workflow": workflow}
        )
    steps = [r for r in asked if "steps" in r.requested_schema["properties"]]
    assert len(steps) == 1 and "step" in steps[0].message
    out = result.structured_content
    assert out["workflow"] == workflow and out["status"] == "failed"  # not finished
    assert "maximum of 1 step" in out["reason"] and ANSWER in out["answer"]
    model.assert_complete()
    with live.api(live.alice.tokens["read"]) as api:
        events = api.get(f"/workflows/{workflow}/events", params={"limit": 500}).json()
    asks = [
        (e["payload"]["status"], e["payload"]["granted"])
        for e in events["events"]
        if e["type"] == "ask"
    ]
    assert asks == [("waiting", 0), ("answered", 0)]
