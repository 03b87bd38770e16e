"""Answers that keep to their sources: the host's string check of figures, names, quotes and
words against the documents an answer or a report was written from; a capability that is
missing said first, whichever way the plan went; arithmetic computed by the host."""

from __future__ import annotations

import re

import pytest

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from tests.engine.test_small_models import NO_SEARCH, ToolsWithoutSearch
from workflows.engine.loop.answer import OWN_KNOWLEDGE
from workflows.engine.loop.asked import calculations, requested_unavailable
from workflows.engine.loop.claim_text import figures_in
from workflows.engine.loop.faithfulness import CAVEAT, check_sources, without_invented
from workflows.engine.testing import MemoryStore

NOTES = """Project Aurora status notes
The Riga office now has 14 engineers.
The new battery lab opened on 3 March.
The budget for 2025 is 2.4 million euros.
The next review meeting is on 12 June.
"""
"""The facts file of bench/real_model.py's report tasks."""
REQUEST = "Write a short report of the attached notes."
SCRIPTED_REPORTS = [
    # As the 1.5B wrote it: true facts, then what no file says.
    (
        "The Riga office has 14 engineers (notes.txt). The battery lab opened on 3 March.\n\n"
        "## Budget\n\n- The budget for 2025 is €2.4 million.\n- The next review is on 12 June."
        "\n\nThe bakery is known for its delicious pastries and its commitment to "
        "sustainability, with positive reviews from 120 customers.",
        {"120"},
    ),
    # As the 0.5B wrote it: figures changed or made up beside the true ones.
    (
        "Project Aurora employs 15 engineers in Riga. Revenue grew by 35% in 2024.\n\n"
        "| Item | Value |\n|---|---|\n| Budget 2025 | 2,400,000 euros |\n"
        "| Staff | 1.8 million |\n",
        {"15", "35%", "2024", "1.8 million"},
    ),
    (
        "Summary: the lab opened on 3 March and the budget is 2.4 million euros; the team met "
        "893,000 users.",
        {"893,000"},
    ),
]
"""Reports as the real models wrote them, with the figures the notes do not hold."""


def figure_words(text: str) -> set[str]:
    return {written for written, _ in figures_in(text)}


@pytest.mark.parametrize(("report", "invented"), SCRIPTED_REPORTS)
def test_every_invented_figure_is_flagged_and_no_true_one(report: str, invented: set[str]):
    """In the suite's report tasks: each figure the notes do not hold is flagged (with the
    sentence that carries it), and none that they hold, in any way it is written."""
    check = check_sources(report, [NOTES], context=[REQUEST])
    assert set(check.figures()) == invented
    assert figure_words(report) - invented  # true figures were there, and passed
    assert all(not claim.supported for claim in check.claims if claim.figures)


def test_true_figures_pass_however_they_are_written() -> None:
    """Thousands separators, scale words, currency signs, dates: a true figure is found."""
    for sentence in (
        "The budget is 2,400,000 euros.",
        "The budget is €2.4 million.",
        "The office has 14 engineers.",
        "The meeting is on June 12.",
    ):
        assert check_sources(sentence, [NOTES]).figures() == [], sentence


def test_a_true_number_given_for_another_thing_is_flagged() -> None:
    """As the 0.5B wrote it in a real run: "12" is in the notes, but as a date beside none of
    the sentence's words; "14" stands beside "engineers" there. Figures the notes give for the
    same thing pass however they are written; a bare figure with no words to judge is left."""
    claim = (
        "The Riga office now has 14 engineers, which is a significant increase from the "
        "previous 12 engineers."
    )
    check = check_sources(claim, [NOTES], context=[REQUEST])
    assert check.figures() == []  # each number is somewhere in the notes
    [judged] = check.checked
    assert judged.elsewhere == ("12",) and judged.invented and not judged.supported
    assert "figures they give only for something else: “12”" in check.summary()
    assert "(12, given for something else)" in check.note()
    for sentence in (
        "The next review meeting is scheduled for June 12.",
        "Number of engineers: 14",
        "The budget for the year 2025 is 2.4 million euros.",
        "- 14",
    ):
        assert check_sources(sentence, [NOTES]).claims[0].elsewhere == (), sentence
    kept, removed = without_invented(
        f"{claim}\n\nThe lab opened on 3 March.",
        check_sources(f"{claim}\n\nThe lab opened on 3 March.", [NOTES]),
    )
    assert [c.text for c in removed] == [claim] and kept == "The lab opened on 3 March."


def test_an_invented_sentence_without_figures_is_not_supported() -> None:
    """What the file never says fails the word check, and is counted in the summary."""
    check = check_sources(
        "The Riga office now has 14 engineers. The bakery is known for its delicious "
        "pastries and its commitment to sustainability.",
        [NOTES],
    )
    assert [claim.supported for claim in check.checked] == [True, False]
    assert check.summary().startswith("1 of 2 sentences is supported by the 1 source")
    assert CAVEAT in check.note()


def test_an_answer_wrapped_in_a_markdown_fence_is_checked_and_code_is_not() -> None:
    """The 1.5B wrapped an answer in a ```markdown block and invented a date in it: its
    sentences are read as prose (the date flagged); a code block's lines are still not."""
    answer = (
        "```markdown\nThe Riga office has 14 engineers.\n"
        "The next review will be held on 15 March.\n```"
    )
    check = check_sources(answer, [NOTES])
    assert [claim.supported for claim in check.checked] == [True, False]
    assert check.figures() == ["15"]
    code = "The Riga office has 14 engineers.\n\n```python\nstaff = 15  # March\n```"
    assert [claim.supported for claim in check_sources(code, [NOTES]).checked] == [True]


def test_the_corrective_pass_takes_out_invented_figures_and_marks_the_rest() -> None:
    """A report keeps what the sources hold; sentences with invented figures go (a list item
    or table row with them), the other unsupported ones are marked where they stand."""
    body = (
        SCRIPTED_REPORTS[0][0] + "\n\n| Item | Value |\n|---|---|\n| Staff | 14 |\n| Cakes | 99 |"
    )
    kept, removed = without_invented(body, check_sources(body, [NOTES], context=[REQUEST]))
    assert "120 customers" not in kept and "| Cakes | 99 |" not in kept
    assert "| Staff | 14 |\n" in kept + "\n" and "\n\n| Staff" not in kept
    assert [claim.figures for claim in removed] == [("120",), ("99",)]
    assert "14 engineers" in kept and "- The budget for 2025 is €2.4 million." in kept
    assert "## Budget" in kept


# --- The answer's note ---------------------------------------------------------------------


def notes_store() -> MemoryStore:
    store = MemoryStore()
    store.add("notes.txt", "text/plain", NOTES.encode(), label="round1_upload")
    return store


async def test_an_answer_written_from_documents_says_how_much_they_support(fake_openai, llm):
    """Refine's answer from an uploaded file, with a figure the file does not hold: the
    answer ends with the host's note naming the figure and the unsupported sentence."""
    answer = {
        **stop(),
        "answer": "The Riga office has 14 engineers. The budget for 2025 is 2.4 million euros. "
        "Revenue grew by 35% last year.",
    }
    fake_openai.add(
        taskplan("Report on the notes", first=select("ai.process")),
        params(aiPrompt="Summarise"),
        "The Riga office has 14 engineers.",
        answer,
    )
    events = await collect(make_state(prompt=REQUEST), llm, store=notes_store())
    fake_openai.assert_complete()
    text = of(events, "message")[-1].content
    assert text.startswith("The Riga office has 14 engineers.")
    note = text[text.index("> Checked against the sources") :]
    assert "2 of 3 sentences are supported" in note and "“35%”" in note
    assert "“Revenue grew by 35% last year.”" in note and CAVEAT in note


async def test_an_answer_that_keeps_to_its_sources_says_so(fake_openai, llm):
    """Every sentence found: the note says all are supported, and flags nothing."""
    fake_openai.add(
        taskplan("Report on the notes", first=select("ai.process")),
        params(aiPrompt="Summarise"),
        "ok",
        {**stop(), "answer": "The Riga office now has 14 engineers; the lab opened 3 March."},
    )
    events = await collect(make_state(prompt=REQUEST), llm, store=notes_store())
    text = of(events, "message")[-1].content
    assert "> Checked against the sources: 1 of 1 sentence is supported" in text
    assert "Not found in the sources" not in text


async def test_a_direct_answer_is_not_checked_against_sources(fake_openai, llm):
    """No action ran: the answer is marked as the model's own knowledge, not checked (though
    the workflow holds a file from an earlier round)."""
    store = MemoryStore()
    store.add("notes.txt", "text/plain", NOTES.encode(), label="round1_upload")
    fake_openai.add({"approach": "direct", "tasks": []}, "Paris is the capital of France.")
    events = await collect(make_state(round=2, prompt="Capital of France?"), llm, store=store)
    text = of(events, "message")[-1].content
    assert "Checked against the sources" not in text and text.endswith(OWN_KNOWLEDGE)


async def test_sources_that_are_not_plain_text_are_named_not_guessed(fake_openai, llm):
    """A PDF the host cannot read here: the answer says it was not checked, and why."""
    store = MemoryStore()
    store.add("notes.pdf", "application/pdf", b"%PDF-1.4 ...", label="round1_upload")
    fake_openai.add(
        taskplan("Report", first=select("ai.process")),
        params(aiPrompt="x"),
        "ok",
        {**stop(), "answer": "The budget is 9 million."},
    )
    events = await collect(make_state(prompt=REQUEST), llm, store=store)
    text = of(events, "message")[-1].content
    assert text.endswith(
        "> Not checked against the sources: “notes.pdf” cannot be read as plain text here."
    )


# --- Not available here --------------------------------------------------------------------


def test_a_request_names_or_needs_a_missing_capability() -> None:
    """Naming every word of the action (a synonym counts), or asking for current facts when
    web search is missing; a request that needs neither names nothing."""
    missing = {"web.search": NO_SEARCH, "github.*": "the MCP server github cannot be used now"}
    assert requested_unavailable("Search the web for the population of Oslo.", missing) == {
        "web.search": NO_SEARCH
    }
    assert "web.search" in requested_unavailable("Look up the news online", missing)
    assert "web.search" in requested_unavailable("What is the current population of Oslo?", missing)
    assert list(requested_unavailable("List my GitHub issues", missing)) == ["github.*"]
    assert requested_unavailable("What is the capital of France?", missing) == {}
    assert requested_unavailable("Search the attached notes for budgets", missing) == {}


async def test_a_direct_answer_opens_with_what_is_not_available_here(fake_openai, llm):
    """The plan chose to answer directly: the answer still opens with the missing capability
    and why, before whatever the model wrote."""
    fake_openai.add({"approach": "direct", "tasks": []}, "The population of Oslo is 893,000.")
    events = await collect(
        make_state(prompt="Search the web for the current population of Oslo."),
        llm,
        tools=ToolsWithoutSearch(),
    )
    text = of(events, "message")[-1].content
    assert text.startswith(f"**Not available here:** web.search — {NO_SEARCH}\n\n")
    assert "893,000" in text and text.endswith(OWN_KNOWLEDGE)


async def test_a_task_that_worked_around_it_still_says_what_is_missing(fake_openai, llm):
    """The plan used another action for a web search: the answer names what is missing."""
    fake_openai.add(
        taskplan("Estimate Oslo's population", first=select("ai.process")),
        params(aiPrompt="Estimate"),
        "About 700,000.",
        {**stop(), "answer": "About 700,000 people live in Oslo."},
    )
    events = await collect(
        make_state(prompt="Search the web for the population of Oslo."),
        llm,
        tools=ToolsWithoutSearch(),
    )
    assert of(events, "message")[-1].content.startswith("**Not available here:** web.search")


# --- Arithmetic ----------------------------------------------------------------------------


def test_the_arithmetic_a_request_asks_for_is_computed() -> None:
    """Operators as people write them; dates, year ranges and numbers alone are not sums."""
    assert calculations("What is 17*23?") == [("17*23", "391")]
    assert calculations("What is 17 × 23?") == [("17 × 23", "391")]
    assert calculations("Calculate (12 + 3) / 4") == [("(12 + 3) / 4", "3.75")]
    assert calculations("What is 2^10?") == [("2^10", "1024")]
    assert calculations("What happened in 2023-2024?") == []
    assert calculations("What is planned on 12/06/2025?") == []
    assert calculations("Write 17*23 on the board.") == []


async def test_a_direct_answer_is_given_the_computed_result(fake_openai, llm):
    """The direct answer's prompt ends with the host's exact result; an answer that states it
    gets no note."""
    fake_openai.add({"approach": "direct", "tasks": []}, "17 × 23 = 391.")
    events = await collect(make_state(prompt="What is 17*23?"), llm)
    user = fake_openai.requests[-1]["messages"][-1]["content"]
    assert user == "What is 17*23?\n\n(PowerOn: computed exactly: 17*23 = 391)"
    assert "Computed by PowerOn" not in of(events, "message")[-1].content


async def test_a_wrong_result_is_corrected_under_the_answer(fake_openai, llm):
    """The model says 401 anyway: the host states the computed result under the answer."""
    fake_openai.add({"approach": "direct", "tasks": []}, "17 × 23 = 401.")
    events = await collect(make_state(prompt="What is 17*23?"), llm)
    text = of(events, "message")[-1].content
    assert re.search(
        r"> Computed by PowerOn: 17\*23 = 391 \(the answer above does not give this result\)",
        text,
    )


async def test_a_result_written_with_separators_counts(fake_openai, llm):
    """1,024 states 1024: no note."""
    fake_openai.add({"approach": "direct", "tasks": []}, "2^10 is 1,024.")
    events = await collect(make_state(prompt="What is 2^10?"), llm)
    assert "Computed by PowerOn" not in of(events, "message")[-1].content
