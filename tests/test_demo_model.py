"""The demo model behaves like a model: it takes its time, streams its answer, counts no
tokens, and keeps the headings and lists of what it read."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from tests.engine.conftest import collect, make_state, of
from tests.live import connect, is_final, receive_until
from tests.support.chat_app import workflow_with_upload
from tests.tools._documents_helpers import context, pdf_text
from workflows.engine.demo.policy import DEMO_LABEL, DemoLLM
from workflows.engine.demo.text import markdown_blocks
from workflows.engine.model.request import Facts, Request
from workflows.engine.records.schemas import RefinementDecision, TaskReview
from workflows.engine.testing import MemoryStore
from workflows.execution import launcher
from workflows.execution.checkpoints import NOT_SET_UP, DurableTools
from workflows.execution.setup import tool_settings
from workflows.models import ChatWorkflow
from workflows.tools.documents.mapreduce import Source, extractive_digest
from workflows.tools.documents.parse import extract
from workflows.tools.documents.report import (
    DocumentGenerateReport,
    DocumentGenerateReportParameters,
)
from workflows.tools.registry import ToolRegistry

NOTES = b"""# Quarterly notes

Revenue grew 12 percent in the third quarter. Costs fell by 3 percent.

## Highlights

- The team shipped the new search feature in August.
- Two new customers signed in September.

## Next steps

1. Hire a designer.
2. Plan the winter release.
"""
REFINE = [{"role": "user", "content": "## Steps so far\n\n## Latest observation\n{}"}]


class Waits:
    """The pauses a DemoLLM asks for, recorded; each is a real (cancellable) asyncio sleep
    of at most `cap` seconds, so the tests stay quick."""

    def __init__(self, cap: float = 0.0) -> None:
        self.cap = cap
        self.seconds: list[float] = []
        self.started = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        self.started.set()
        await asyncio.sleep(min(seconds, self.cap))


def notes_store() -> MemoryStore:
    store = MemoryStore()
    store.add("notes.md", "text/markdown", NOTES, label="round1_uploads")
    return store


async def demo_round(llm: DemoLLM) -> tuple[list, MemoryStore]:
    """A whole React round of the demo model over notes.md, through the real tools."""
    store = notes_store()
    tools = ToolRegistry(tool_settings())
    events = await collect(make_state(prompt="Summarise my notes"), llm, tools=tools, store=store)
    return events, store


# --- pacing -----------------------------------------------------------------------------------


async def test_each_call_waits_a_few_hundred_milliseconds_the_same_each_time() -> None:
    """With delay_ms=500 every call waits 0.3 to 0.7 s, by its kind and prompt size, and the
    same call waits as long again."""
    waits = Waits()
    llm = DemoLLM(delay_ms=500, sleep=waits)
    for kind, output in [("refine", RefinementDecision), ("review", TaskReview)] * 2:
        await llm.complete(REFINE, output=output, kind=kind)
    assert all(0.3 <= seconds <= 0.7 for seconds in waits.seconds)
    assert waits.seconds[:2] == waits.seconds[2:] and waits.seconds[0] != waits.seconds[1]


async def test_a_paced_call_really_takes_its_time() -> None:
    """The wait is real: a call at delay_ms=100 takes at least 60 ms."""
    started = time.perf_counter()
    await DemoLLM(delay_ms=100).complete(REFINE, output=RefinementDecision, kind="refine")
    assert time.perf_counter() - started >= 0.06


async def test_without_a_delay_the_demo_model_never_waits() -> None:
    """delay_ms=0 (the tests' setting) answers at once: no pause is asked for."""
    waits = Waits()
    events, _ = await demo_round(DemoLLM(sleep=waits))
    assert events[-1].status == "completed"
    assert waits.seconds == []


async def test_a_cancelled_call_ends_at_once() -> None:
    """Cancelling a call that would wait a minute ends it at once (Stop cancels the run's
    task, and with it the wait)."""
    waits = Waits(cap=60)
    call = asyncio.create_task(
        DemoLLM(delay_ms=60_000, sleep=waits).complete(
            REFINE, output=RefinementDecision, kind="refine"
        )
    )
    await waits.started.wait()
    call.cancel()
    done, _ = await asyncio.wait({call}, timeout=5)
    assert done == {call} and call.cancelled()


# --- the streamed answer ----------------------------------------------------------------------


async def test_the_answer_streams_in_small_pieces_with_pauses() -> None:
    """The final answer arrives as many small deltas, each after a short pause; the pieces
    add up to the answer message."""
    waits = Waits()
    events, _ = await demo_round(DemoLLM(delay_ms=500, sleep=waits))
    deltas = [d for d in of(events, "delta") if d.key == "round1_answer"]
    answer = of(events, "message")[-1]
    *written, note = deltas  # the host's note under it (its source check) comes whole
    assert note.text.startswith("\n\n> Checked against the sources")
    assert len(written) > 20
    assert max(len(d.text) for d in written) <= 14
    assert "".join(d.text for d in deltas) == answer.content
    pauses = [seconds for seconds in waits.seconds if seconds < 0.1]
    assert len(pauses) == len(written) - 1 and all(p > 0 for p in pauses)


async def test_the_whole_answer_streams_within_a_few_seconds() -> None:
    """However long the answer, its pauses add up to at most six call delays."""
    waits = Waits()
    llm = DemoLLM(delay_ms=500, sleep=waits)
    results = tuple((f"n{n}.md", "Words go on. " * 40) for n in range(6))
    request = Request([{"role": "user", "content": "Summarise"}], Facts(results=results))
    pieces = [p async for p in llm.stream_text(request, kind="f")]
    assert len(pieces) > 300
    assert sum(waits.seconds[1:]) <= 3.0 + 1e-9


# --- no invented tokens -----------------------------------------------------------------------


async def test_the_demo_model_reports_no_tokens() -> None:
    """Every model call of a demo round reports zero tokens, as the demo model; the round's
    total is zero and its budgets never trip."""
    events, _ = await demo_round(DemoLLM())
    usages = of(events, "usage")
    assert len(usages) >= 3  # task plan, two refines (the report's defaults need no Stage 2)
    assert {u.model for u in usages} == {DEMO_LABEL}
    assert {(u.promptTokens, u.completionTokens, u.cachedTokens) for u in usages} == {(0, 0, 0)}
    assert of(events, "round")[-1].tokens == 0
    assert events[-1].status == "completed"


# --- headings and lists -----------------------------------------------------------------------


async def test_the_demo_report_keeps_headings_and_lists() -> None:
    """The demo's report of a notes file keeps its headings (below the file's name) and its
    bullet and numbered lists, in the Markdown, the HTML and the PDF."""
    ctx = context(("notes.md", "text/markdown", NOTES), llm=DemoLLM())
    params = DocumentGenerateReportParameters(title="Notes")
    result = await DocumentGenerateReport().run(params, ctx)
    assert result.success
    files = {doc.mime: doc.data for doc in result.documents}
    markdown = files["text/markdown"].decode()
    assert "_Compiled by the demo model, without a language model" in markdown
    assert (
        "## notes.md\n\n### Quarterly notes\n\n"
        "Revenue grew 12 percent in the third quarter. Costs fell by 3 percent.\n\n"
        "#### Highlights\n\n"
        "- The team shipped the new search feature in August.\n"
        "- Two new customers signed in September.\n\n"
        "#### Next steps\n\n1. Hire a designer.\n2. Plan the winter release.\n"
    ) in markdown
    html = files["text/html"].decode()
    assert "<h3>Quarterly notes</h3>" in html and "<h4>Highlights</h4>" in html
    assert "<li>Two new customers signed in September.</li>" in html
    assert "<ol>\n<li>Hire a designer.</li>" in html
    lines = [line.strip() for line in pdf_text(files["application/pdf"]).splitlines()]
    assert "Highlights" in lines
    assert "• Two new customers signed in September." in lines
    assert "2. Plan the winter release." in lines


async def test_a_whole_demo_round_keeps_the_notes_structure() -> None:
    """Through extraction, report and answer, the notes' headings and lists survive: the
    report restates them, and so does the answer refine writes from the report's preview, as
    far as that preview reaches whole: it ends at a sentence's end, never mid-word, and no
    heading is left with nothing under it."""
    events, store = await demo_round(DemoLLM())
    report = next(ref for ref in store.index() if ref.label.endswith("_report"))
    markdown = (await store.read(report)).decode()
    assert "### Quarterly notes" in markdown and "#### Next steps" in markdown
    assert "- Two new customers signed in September.\n" in markdown
    assert "_MARKDOWN" not in markdown  # the extract's facts line is not the notes' text
    answer = of(events, "message")[-1].content
    assert answer.startswith("> Summary by the demo model (extractive):")
    assert "**report_on_the_uploaded_documents.md**" in answer
    assert re.search(r"#+ Quarterly notes\n\nRevenue grew 12 percent in the third quarter", answer)
    assert "…" not in answer and "Highlights" not in answer  # its item was cut: both go
    quoted = answer.split("\n\nFiles written:")[0]
    assert quoted.endswith("Costs fell by 3 percent.")
    assert "Files written: `report_on_the_uploaded_documents.md`" in answer


async def test_the_demo_model_does_not_repeat_the_hosts_note_to_the_model(settings) -> None:
    """Asked for what it cannot do with no search provider, the demo model says it cannot
    answer (and the round fails), without the host's note about unavailable actions that
    follows the user's message in the prompt; the answer's own line on what is not available
    here says web search is not set up, not which setting the operator sets (the runs' tools,
    as the runner gives them to the engine)."""
    settings.POWERON_SEARCH_PROVIDER = ""
    tools = DurableTools(ToolRegistry(tool_settings()), checkpoints=None)  # type: ignore[arg-type]
    state = make_state(prompt="Search the web for the latest Python release")
    events = await collect(state, DemoLLM(), tools=tools, store=MemoryStore())
    answer = of(events, "message")[-1].content
    assert "the demo model cannot answer this" in answer
    assert f"**Not available here:** web.search — {NOT_SET_UP}" in answer
    assert "PowerOn:" not in answer and "POWERON_SEARCH_PROVIDER" not in answer
    assert events[-1].status == "failed"


def test_collapsed_previews_get_their_blocks_back() -> None:
    """A preview's headings and list items are found again; a dash inside a sentence stays
    a dash, and a heading whose end cannot be told stays a paragraph."""
    assert markdown_blocks("# Plan Costs fell. ## Steps - one - two") == [
        "Plan Costs fell.",
        "#### Steps",
        "- one",
        "- two",
    ]
    assert markdown_blocks("Revenue grew - a lot. - first - second") == [
        "Revenue grew - a lot.",
        "- first",
        "- second",
    ]
    assert markdown_blocks("# Quarterly Notes Revenue grew in May. Costs fell.") == [
        "Quarterly Notes Revenue grew in May. Costs fell."
    ]
    # A number ending a list item's sentence is not a numbered item of its own.
    assert markdown_blocks("- Costs fell 3. Good. - Another point 0. Done") == [
        "- Costs fell 3. Good.",
        "- Another point 0. Done",
    ]
    assert markdown_blocks("Steps: 1. Open 2. Close") == ["Steps:", "1. Open", "2. Close"]


def test_the_digest_keeps_code_as_it_is_and_closes_a_cut_fence() -> None:
    """Inside a code block nothing is demoted; a digest cut inside one closes it, so the
    report's own sections stay outside it."""
    data = b"# A\n\n```\n# not a heading\n" + b"x\n" * 900
    ref = MemoryStore().add("a.md", "text/markdown", data, label="round1_uploads")
    source = Source(ref, extract(data, name="a.md", mime="text/markdown"))
    digest = extractive_digest([source], chars_per_source=200)
    assert "```\n# not a heading\n" in digest
    assert digest.rstrip().endswith("```")


# --- the app ----------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("durable")
async def test_stop_during_a_paced_demo_call_ends_the_run_at_once(alice, settings) -> None:
    """With the demo model pacing itself (here a minute per call), Stop ends the run while
    its first call still waits, as stopped."""
    settings.POWERON_DEMO_DELAY_MS = 60_000
    workflow, upload = await workflow_with_upload(alice)
    communicator = await connect(alice, workflow.pk)
    await communicator.send_json_to(
        {"action": "send", "text": "Summarise the notes", "documents": [upload.pk]}
    )
    await receive_until(communicator, lambda e: e["type"] == "round")
    await communicator.send_json_to({"action": "stop"})
    events = await receive_until(communicator, is_final, timeout=10)
    assert events[-1]["payload"]["status"] == "stopped"
    assert "taskplan" not in [e["type"] for e in events]  # the first call never answered
    assert await launcher.wait_for(workflow.pk) in (None, ChatWorkflow.Status.STOPPED)
    await communicator.disconnect()


async def test_the_demo_model_reads_only_what_the_message_sent() -> None:
    """In a later round the demo model reads the files sent with this message, not every
    earlier upload again (which repeated the same report in each answer); a follow-up that
    sends none and speaks of no file is answered directly."""
    from workflows.engine.prompting.prompts import render_documents

    store = MemoryStore()
    store.add("old.md", "text/markdown", b"# Old\n\nOld notes.", label="round1_upload", round=1)
    store.add("new.md", "text/markdown", b"# New\n\nNew notes.", label="round2_upload", round=2)
    index = render_documents(store.index(), current_round=2)
    assert "docList:round2_upload (1 document(s), sent with this message)" in index
    assert "docList:round1_upload (1 document(s))\n" in index

    state = make_state(round=2, prompt="Summarise these notes")
    events = await collect(state, DemoLLM(), store=store)
    read = of(events, "plan")[0].selection.requiredInputDocuments
    assert read == ["docList:round2_upload"]

    followup = make_state(round=3, prompt="What is 17*23?")
    events = await collect(followup, DemoLLM(), store=store)
    assert of(events, "taskplan")[0].tasks == [] and not of(events, "plan")


class Recording(DemoLLM):
    """The demo model, keeping every structured request it answered."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, Request]] = []

    async def complete(self, messages, *, output, kind, key="", on_answer=None):  # type: ignore[no-untyped-def, override]
        assert isinstance(messages, Request)  # the facts come with the messages
        self.requests.append((kind, messages))
        return await super().complete(
            messages, output=output, kind=kind, key=key, on_answer=on_answer
        )


@pytest.mark.parametrize(
    ("mode", "kinds"),
    [
        ("react", {"taskplan", "refine"}),
        ("actionplan", {"taskplan", "review"}),
        ("reasoning", {"thought"}),
    ],
)
async def test_the_facts_say_what_the_prompt_says(mode: str, kinds: set[str]) -> None:
    """The demo answers each call of a round from the facts it is handed exactly as it would
    from the prompt's own words (read back from the text, as a server over HTTP must)."""
    from tests.support.prompt_facts import facts_from_prompt

    llm = Recording()
    state = make_state(prompt="Summarise my notes", mode=mode)
    events = await collect(state, llm, tools=ToolRegistry(tool_settings()), store=notes_store())
    assert events[-1].status == "completed"
    assert {kind for kind, _ in llm.requests} == kinds
    for kind, request in llm.requests:
        assert llm.decide(kind, request.facts) == llm.decide(kind, facts_from_prompt(kind, request))
