"""`manage.py run_workflow` end to end, as a real subprocess: exit status, stdout events,
the stored documents, against the fake model server, the local test site and fake search
providers (every address 127.0.0.1)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fpdf import FPDF

from tests.support.cli import (
    REPO,
    cli_env,
    copy_database,
    download,
    manage,
    migrated,
    run_workflow,
)
from tests.support.fake_openai import FakeOpenAIServer, FakeReply
from tests.support.fake_search import FakeSearxng, FakeTavily, site_hits
from tests.support.replies import cont, extract_step, params, review, select, stop, taskplan
from tests.support.website import TestWebsite

EVENT_KEYS = {"seq", "type", "round", "task", "action", "payload"}
PAGE_ONE = "Solar capacity in the Baltic states doubled between 2021 and 2023."
PAGE_TWO = "Riga installed 1200 rooftop panels on public schools in 2023."


def model_settings(server: FakeOpenAIServer) -> dict[str, str]:
    return {"POWERON_LLM_BASE_URL": server.url, "POWERON_LLM_API_KEY": "sk-test"}


def call_kinds(server: FakeOpenAIServer) -> list[str]:
    return server.kinds()


def prompt_text(body: dict) -> str:
    return "\n".join(str(message.get("content")) for message in body["messages"])


def two_page_pdf(path: Path) -> Path:
    """A real two-page PDF with one known sentence per page."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for heading, sentence in (("Solar in the Baltics", PAGE_ONE), ("Schools", PAGE_TWO)):
        pdf.add_page()
        pdf.multi_cell(0, 8, f"{heading}\n\n{sentence}")
    pdf.output(str(path))
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database, made once per module and copied for each run."""
    return migrated(tmp_path_factory.mktemp("template") / "var")


@pytest.fixture
def var_dir(template: Path, tmp_path: Path) -> Path:
    """This test's own copy of the migrated database and media directory."""
    return copy_database(template, tmp_path / "var")


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("Solar power grew by 40 percent in 2023.\nWind farms produced steady power.\n")
    return path


# --- document.extract → ai.process → document.generateReport on an uploaded PDF ------------

REPORT_BODY = "## Summary\n\nBaltic solar capacity doubled; Riga equipped 1200 schools."


@pytest.fixture(scope="module")
def pdf_run(template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One scripted three-action round over an uploaded two-page PDF (shared: it is slow)."""
    work = tmp_path_factory.mktemp("pdf")
    var_dir = copy_database(template, work / "var")
    pdf = two_page_pdf(work / "briefing.pdf")
    with FakeOpenAIServer() as server:
        server.add(
            taskplan("Write a report on the briefing"),
            *extract_step("docList:round1_upload"),
            cont(  # the next action comes with the decision: no Stage 1 call
                "Now summarise it.",
                next=select(
                    "ai.process",
                    requiredInputDocuments=["docList:round1_task1_action1_extracted"],
                    parametersSchema={"fields": []},  # aiPrompt is required: Stage 2 asks
                ),
            ),
            params(aiPrompt="Summarise the key facts"),
            "Key facts: Baltic solar capacity doubled; Riga equipped 1200 schools.",
            cont(
                "Now the report.",
                next=select(
                    "document.generateReport",
                    requiredInputDocuments=[
                        "docList:round1_task1_action1_extracted",
                        "docList:round1_task1_action2_processed",
                    ],
                    parametersSchema={"fields": [{"name": "title", "type": "string"}]},
                ),
            ),
            params(title="Baltic Solar Briefing"),
            REPORT_BODY,
            stop(),
            "The report is ready.",
        )
        run = run_workflow(
            var_dir,
            "--document",
            str(pdf),
            "Write a report on the attached briefing",
            settings=model_settings(server),
        )
        yield run, server, var_dir


def test_a_pdf_round_exits_zero_with_one_json_event_per_line(pdf_run) -> None:
    """The round completes (exit 0); each stdout line is an event with its routing fields
    and the seqs run 1..n without a gap."""
    run, server, _ = pdf_run
    assert run.returncode == 0, run.explain()
    server.assert_complete()
    assert all(event.keys() >= EVENT_KEYS for event in run.events)
    assert [event["seq"] for event in run.events] == list(range(1, len(run.events) + 1))
    assert run.events[0]["type"] == "message" and run.events[0]["payload"]["role"] == "user"
    assert run.events[-1]["type"] == "run"
    assert run.events[-1]["payload"] == {"status": "completed", "reason": "Task 1 success: Done."}
    # The answer, and under it the host's note that the PDF could not be checked as text.
    assert run.answer.split("\n\n")[0] == "The report is ready."
    assert "> Not checked against the sources: “briefing.pdf”" in run.answer


def test_the_three_actions_run_in_order_and_the_pdf_text_reaches_the_model(pdf_run) -> None:
    """extract, process and report run as actions 1-3; both PDF pages reach ai.process."""
    run, server, _ = pdf_run
    acts = [(e["action"], e["payload"]["method"]) for e in run.of("act")]
    assert acts == [(1, "document.extract"), (2, "ai.process"), (3, "document.generateReport")]
    assert all(e["payload"]["observation"]["success"] for e in run.of("observe"))
    assert call_kinds(server) == [  # no Stage 2 for extract, no review: criteria met
        "TaskPlan",
        *["ActionSelection", "RefinementDecision"],
        *["ActionParameters", "text", "RefinementDecision"],
        *["ActionParameters", "text", "RefinementDecision"],
        "final",
    ]
    process_prompt = prompt_text(server.requests[4])
    assert PAGE_ONE in process_prompt and PAGE_TWO in process_prompt


def test_the_report_is_stored_as_markdown_html_and_pdf_under_action_three(pdf_run) -> None:
    """The report's three files are `document` events labelled round1_task1_action3_report."""
    run, _, _ = pdf_run
    report = run.documents("round1_task1_action3_")
    assert {(doc["name"], doc["mime"]) for doc in report} == {
        ("baltic_solar_briefing.md", "text/markdown"),
        ("baltic_solar_briefing.html", "text/html"),
        ("baltic_solar_briefing.pdf", "application/pdf"),
    }
    assert {doc["label"] for doc in report} == {"round1_task1_action3_report"}


def test_the_report_pdf_downloads_for_its_owner(pdf_run) -> None:
    """The owner gets the PDF through the app's download view, as an attachment."""
    run, _, var_dir = pdf_run
    (pdf,) = [doc for doc in run.documents("round1_task1_action3_") if doc["name"].endswith("pdf")]
    got = download(var_dir, workflow=run.workflow, document=pdf["id"], user="cli")
    assert got.status == 200
    assert got.content_type == "application/pdf"
    assert 'attachment; filename="baltic_solar_briefing.pdf"' in got.disposition
    assert got.body.startswith(b"%PDF")
    assert len(got.body) == pdf["size"]


def test_the_downloaded_markdown_report_lists_its_sources(pdf_run) -> None:
    """The Markdown report holds the model's body and names both input documents."""
    run, _, var_dir = pdf_run
    (md,) = [doc for doc in run.documents("round1_task1_action3_") if doc["name"].endswith(".md")]
    got = download(var_dir, workflow=run.workflow, document=md["id"], user="cli")
    assert got.status == 200
    text = got.body.decode()
    assert text.startswith("# Baltic Solar Briefing\n")
    assert "Riga equipped 1200 schools" in text
    sources = text.split("## Sources", 1)[1]
    assert "1. briefing.md" in sources and "2. result.md" in sources


def test_another_user_cannot_download_the_report(pdf_run) -> None:
    """The download view answers 404 to anyone but the workflow's owner."""
    run, _, var_dir = pdf_run
    pdf = run.documents("round1_task1_action3_")[0]
    got = download(var_dir, workflow=run.workflow, document=pdf["id"], user="mallory")
    assert got.status == 404
    assert not got.body.startswith(b"%PDF")


# --- web.search → web.scrape → web.crawl against the local site ----------------------------


@pytest.fixture(scope="module", params=["tavily", "searxng"])
def web_run(request, template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """A scripted search → scrape → crawl round; the provider's only hit is the site's /b,
    which links to /c."""
    var_dir = copy_database(template, tmp_path_factory.mktemp("web") / "var")
    provider_class = FakeTavily if request.param == "tavily" else FakeSearxng
    with (
        TestWebsite() as site,
        provider_class(site.url, site_hits(["/b"])) as provider,
        FakeOpenAIServer() as server,
    ):
        settings = {
            **model_settings(server),
            "POWERON_SEARCH_PROVIDER": request.param,
            "POWERON_FETCH_ALLOW_HOSTS": site.origin,
        }
        if request.param == "tavily":
            settings |= {
                "POWERON_TAVILY_API_KEY": "tvly-test-key",
                "POWERON_TAVILY_URL": provider.url,
            }
        else:
            settings["POWERON_SEARXNG_URL"] = provider.url
        server.add(
            taskplan("Research offshore wind"),
            select("web.search"),
            params(query="offshore wind farms"),
            cont("Read the pages."),
            select("web.scrape"),
            params(query="offshore wind farms", maxResults=3),
            cont("Follow their links."),
            select(
                "web.crawl",
                requiredInputDocuments=["docList:round1_task1_action1_search"],
                parametersSchema={"fields": [{"name": "extractDepth", "type": "enum"}]},
            ),
            params(extractDepth="basic"),
            stop(),
            "Wind farms at sea produce steady power.",
        )
        # The crawl reads addresses from a document (the search's results): it asks for
        # approval by default (POWERON_OFFSITE_APPROVAL), which --approve gives.
        run = run_workflow(var_dir, "Research offshore wind farms", "--approve", settings=settings)
        yield run, server, site, provider


def test_a_web_round_exits_zero(web_run) -> None:
    """search, scrape and crawl each succeed and the round completes."""
    run, server, _, _ = web_run
    assert run.returncode == 0, run.explain()
    server.assert_complete()
    methods = [e["payload"]["method"] for e in run.of("act")]
    assert methods == ["web.search", "web.scrape", "web.crawl"]
    assert all(e["payload"]["observation"]["success"] for e in run.of("observe")), run.explain()


def test_the_provider_receives_the_models_query(web_run) -> None:
    """Search and scrape each ask the configured provider once, with the model's query."""
    _, _, _, provider = web_run
    queries = [q.get("query") or q.get("q") for q in provider.queries]
    assert queries == ["offshore wind farms", "offshore wind farms"]


def test_scraped_pages_are_stored_with_the_local_site_as_source(web_run) -> None:
    """web.scrape stores the hit's page as a fetched document whose sourceUrl is the site."""
    run, _, site, _ = web_run
    (page,) = run.documents("round1_task1_action2_scrape")
    assert page["source"] == "fetched"
    assert page["sourceUrl"] == site.page_url("/b")


def test_the_crawl_follows_same_site_links(web_run) -> None:
    """web.crawl fetches the search result /b and the page it links to, /c."""
    run, _, site, _ = web_run
    crawled = run.documents("round1_task1_action3_crawl")
    assert {doc["sourceUrl"] for doc in crawled} == {site.page_url("/b"), site.page_url("/c")}
    assert all(doc["source"] == "fetched" for doc in crawled)
    assert "/c" in site.paths and "/robots.txt" in site.paths


# --- exit status 1: the round fails ---------------------------------------------------------


def test_a_model_that_always_errs_fails_the_round_with_exit_one(var_dir, notes) -> None:
    """HTTP 500 on every attempt: the model is reported unavailable and the exit status is 1."""
    with FakeOpenAIServer() as server:
        server.add(*[FakeReply(status=500)] * 3)  # the first try and two retries
        run = run_workflow(
            var_dir, "--document", str(notes), "Summarise", settings=model_settings(server)
        )
    assert run.returncode == 1, run.explain()
    server.assert_complete()
    (error,) = run.of("error")
    assert error["payload"]["kind"] == "model"
    assert run.of("round")[-1]["payload"]["status"] == "failed"
    assert run.events[-1]["payload"]["status"] == "failed"


def test_invalid_output_twice_fails_the_round_with_exit_one(var_dir) -> None:
    """An action selection invalid twice fails the step; the task fails and so does the round
    although the review claims success; the answer, written from the facts, claims nothing."""
    with FakeOpenAIServer() as server:
        server.add(
            taskplan("Find facts"),
            "not json at all",
            {"action": "web.teleport"},  # still invalid: no such action
            review("success"),
        )
        run = run_workflow(var_dir, "Find facts", settings=model_settings(server))
    assert run.returncode == 1, run.explain()
    server.assert_complete()
    errors = [e["payload"] for e in run.of("error")]
    assert [e["retrying"] for e in errors] == [True, False]
    assert "step_failed" in [e["payload"].get("code") for e in run.of("status")]
    assert run.of("review")[0]["payload"]["status"] == "failed"
    assert run.events[-1]["payload"]["status"] == "failed"
    assert run.answer.startswith("I could not complete this request. No step succeeded.")
    assert "No document was produced." in run.answer


# --- exit status 2: bad arguments -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "fast", "Summarise"], "invalid choice: 'fast'"),
        ([], "the following arguments are required: task"),
        (["   "], "the task is empty"),
        (["--document", "/nonexistent/report.pdf", "Summarise"], "no such file"),
        (["--user", "nobody", "Summarise"], "no user named 'nobody'"),
        (["--max-steps", "0", "Summarise"], "--max-steps must be between 1 and 50"),
    ],
    ids=["unknown-mode", "missing-task", "empty-task", "missing-file", "unknown-user", "steps"],
)
def test_bad_arguments_exit_two_with_a_message(var_dir, args, message) -> None:
    """Bad arguments: exit status 2, the reason on stderr, no event on stdout."""
    run = run_workflow(var_dir, *args)
    assert run.returncode == 2, run.explain()
    assert message in run.stderr
    assert run.events == []


# --- the other modes -----------------------------------------------------------------------


def test_an_actionplan_round_through_the_command(var_dir, notes) -> None:
    """--mode actionplan: the planned extract runs with its label; exit 0."""
    with FakeOpenAIServer() as server:
        server.add(
            taskplan("Extract the notes"),
            {
                "actions": [
                    {
                        "action": "document.extract",
                        "actionObjective": "Read the notes",
                        "requiredInputDocuments": ["docList:round1_upload"],
                        "parameters": {},
                        "resultLabel": "extract",
                    }
                ]
            },
            review(),
            "Extracted.",
        )
        run = run_workflow(
            var_dir,
            "--mode",
            "actionplan",
            "--document",
            str(notes),
            "Extract the notes",
            settings=model_settings(server),
        )
    assert run.returncode == 0, run.explain()
    server.assert_complete()
    assert call_kinds(server) == ["TaskPlan", "ActionPlan", "TaskReview", "final"]
    assert run.of("round")[0]["payload"]["mode"] == "actionplan"
    (document,) = run.documents()
    assert (document["name"], document["label"]) == ("notes.md", "round1_task1_action1_extract")


def test_a_reasoning_round_through_the_command(var_dir) -> None:
    """--mode reasoning: thought after thought, the last one is the answer; exit 0."""
    with FakeOpenAIServer() as server:
        server.add(
            {
                "current_thinking": "Split the sum.",
                "planning": [{"description": "Add 40 and 2"}],
                "next_thought_needed": True,
            },
            {
                "current_thinking": "40 + 2 = 42.",
                "planning": [{"description": "Add 40 and 2", "status": "Done", "result": "42"}],
                "next_thought_needed": False,
            },
        )
        run = run_workflow(
            var_dir, "--mode", "reasoning", "What is 40 + 2?", settings=model_settings(server)
        )
    assert run.returncode == 0, run.explain()
    server.assert_complete()
    assert call_kinds(server) == ["Thought", "Thought"]
    assert len(run.of("thought")) == 2
    assert run.answer == "40 + 2 = 42."


# --- no model configured: the demo model ----------------------------------------------------


def test_without_a_model_the_demo_model_runs_a_whole_round(var_dir, notes) -> None:
    """No POWERON_LLM_* or OPENAI_* in the environment: the demo model extracts the upload,
    writes a report and answers; every model event names it; exit 0."""
    run = run_workflow(var_dir, "--document", str(notes), "Summarise the notes")
    assert run.returncode == 0, run.explain()
    assert {e["payload"]["model"] for e in run.of("round")} == {"demo model"}
    assert {e["payload"]["model"] for e in run.of("usage")} == {"demo model"}
    methods = [e["payload"]["method"] for e in run.of("act")]
    assert methods == ["document.extract", "document.generateReport"]
    assert {doc["name"].rsplit(".", 1)[1] for doc in run.documents("round1_task1_action2_")} == {
        "md",
        "html",
        "pdf",
    }
    assert "demo model" in run.answer


# --- questions answered without a person ------------------------------------------------------


def _extract_twice(server: FakeOpenAIServer, *after_limit: Any) -> None:
    """An extract, then refine asking for a second one at the step limit of one."""
    extract = extract_step("docList:round1_upload")[0]
    server.add(taskplan("Extract the notes"), extract, cont(next=extract), *after_limit)


def test_extend_grants_more_steps_at_the_limit_without_waiting(var_dir, notes) -> None:
    """--extend 1: the step-limit question is answered at once with one more step."""
    with FakeOpenAIServer() as server:
        _extract_twice(server, stop(), "Extracted twice.")
        run = run_workflow(
            var_dir, "--max-steps", "1", "--extend", "1", "--document", str(notes),
            "Extract the notes", settings=model_settings(server),
        )  # fmt: skip
    assert run.returncode == 0, run.explain()
    server.assert_complete()
    asks = [e["payload"] for e in run.of("ask")]
    assert [a["status"] for a in asks] == ["waiting", "answered"] and asks[-1]["granted"] == 1
    assert len(run.documents()) == 2


def test_work_cut_short_at_the_step_limit_is_never_done(var_dir, notes) -> None:
    """--decline at a step limit of one while refine said "continue — more work needed": the
    question is declined at once, and although the review ticks every criterion the task is
    incomplete, the round fails (exit 1), the answer opens with what was not done, and the
    report it claims under a name without an extension, which nobody produced, is pointed out
    (it ended "Completed — Task 1 success: The maximum of 1 step was reached.", exit 0). (With
    no search provider set, the model is told web search is unavailable, and why.)"""
    with FakeOpenAIServer() as server:
        ticked = {**review("success"), "metCriteria": ["It is done."]}
        extract = extract_step("docList:round1_upload")[0]
        server.add(
            taskplan("Extract the notes"),
            extract,
            cont("continue — more work needed", next=extract),
            ticked,
            "The report 'Canary Report' is attached.",
        )
        run = run_workflow(
            var_dir, "--max-steps", "1", "--decline", "--document", str(notes),
            "Write the canary report", settings=model_settings(server),
        )  # fmt: skip
    assert run.returncode == 1, run.explain()
    server.assert_complete()
    assert run.of("ask")[-1]["payload"]["granted"] == 0
    system = server.requests[0]["messages"][0]["content"]
    assert "Unavailable here" in system and "- web.search: " in system
    assert "max_steps" in [e["payload"].get("code") for e in run.of("status")]
    said = (
        "The maximum of 1 step was reached. Its last refinement said more was needed: "
        "“continue — more work needed”"
    )
    assert [e["payload"]["status"] for e in run.of("review")] == ["incomplete"]
    assert run.of("task")[-1]["payload"]["status"] == "incomplete"
    assert run.of("task")[-1]["payload"]["reason"] == said
    final = run.events[-1]["payload"]
    assert final == {"status": "failed", "reason": f"The task was not finished: Task 1: {said}"}
    assert run.of("round")[-1]["payload"]["status"] == "failed"
    assert run.answer.startswith(f"**Not finished:** task 1 (Extract the notes) — {said}")
    assert (
        "\n\n> Note from PowerOn: no document named “Canary Report” exists in this workflow.\n\n"
        in run.answer
    )
    assert "Not found in the sources: “The report 'Canary Report' is attached.”" in run.answer


def test_a_model_slower_than_its_timeout_is_told_with_the_setting_to_raise(var_dir) -> None:
    """POWERON_LLM_TIMEOUT=2 and a model that takes 8 s to choose an action: each call's
    error says how long it waited and which settings to raise (the time per 1,000 tokens
    too: the server is on this machine), not that the answer may have been looping (nothing
    of it had come); the step, the run's final status and the answer give the same reason,
    without a stutter ("stopped: step: Step 1 failed") or an internal label ("a1 step")."""
    slow = FakeReply(content=json.dumps(select()), delay=8)  # well past the timeout
    with FakeOpenAIServer() as server:
        server.add(taskplan("Think"), slow, slow, review("failed"))
        settings = {**model_settings(server), "POWERON_LLM_TIMEOUT": "2"}
        run = run_workflow(var_dir, "Think long", settings=settings)
    assert run.returncode == 1, run.explain()
    server.assert_complete()
    advice = (
        "Raise POWERON_LLM_TIMEOUT (now 2 s) or POWERON_LLM_TIMEOUT_PER_1K (now 0 s per 1,000 "
        "tokens, which a slow local server needs), or check the server's load."
    )
    # In words for everyone; the settings to raise are the error's detail, for the operator
    # (who runs this command, and staff on the page).
    plainly = "no answer within 2 s; if it keeps happening, ask the administrator to give the "
    plainly += "model more time"
    errors = [e["payload"]["message"] for e in run.of("error")]
    told = "The model produced no valid answer for the action selection: "
    assert errors == [told + plainly] * 2
    assert [e["payload"]["detail"] for e in run.of("error")] == [advice] * 2
    reason = (
        "Step 1 failed: the model gave no valid action selection after one corrective retry — "
        f"{plainly}."
    )
    assert [e["payload"]["reason"] for e in run.of("step") if e["payload"]["reason"]] == [reason]
    assert run.events[-1]["payload"]["reason"] == f"The task did not succeed: Task 1: {reason}"
    assert f"- Task 1 (Think): {reason}" in run.answer
    texts = [*errors, reason, run.events[-1]["payload"]["reason"], run.answer]
    assert not [text for text in texts if "looping" in text or "a1" in text.split()]


@pytest.mark.parametrize(("flag", "status"), [("--approve", "approved"), ("--reject", "rejected")])
def test_approvals_are_answered_by_the_flags(var_dir, notes, flag, status) -> None:
    """--approve runs an action that waits for approval; --reject refuses it."""
    with FakeOpenAIServer() as server:
        server.add(taskplan("Extract the notes"), *extract_step("docList:round1_upload"))
        if status == "approved":
            server.add(stop(), "Extracted.")
        else:
            server.add(stop(criteria_met=False), review("failed"))
        settings = {**model_settings(server), "POWERON_APPROVAL_METHODS": "document.extract"}
        run = run_workflow(
            var_dir, flag, "--document", str(notes), "Extract the notes", settings=settings
        )
    server.assert_complete()
    approvals = [e["payload"]["status"] for e in run.of("approval")]
    assert approvals == ["waiting", status]
    assert run.returncode == (0 if status == "approved" else 1), run.explain()


def test_an_unreadable_document_is_a_bad_argument_and_stores_nothing(var_dir) -> None:
    """A --document that exists but cannot be read: exit 2 with the reason, and no empty
    workflow left behind (it was a traceback, exit 1, and an "Untitled" workflow)."""
    run = run_workflow(var_dir, "--document", "/proc/self/mem", "Read it")
    assert run.returncode == 2, run.explain()
    assert "cannot read /proc/self/mem" in run.stderr
    assert "Traceback" not in run.stderr
    check = manage(
        var_dir, "shell", "-c",
        "from workflows.models import ChatWorkflow; print(ChatWorkflow.objects.count())",
    )  # fmt: skip
    assert check.stdout.strip().splitlines()[-1] == "0"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_the_run_keeping_its_work_and_exits_1(var_dir, sig) -> None:
    """Ctrl-C or SIGTERM during a run stops it as the page's Stop does: the final event
    says stopped, the process exits 1 without a traceback (it died of the signal, or left
    the workflow running for good)."""
    with FakeOpenAIServer() as server:
        server.add(taskplan("Think"), FakeReply(content=json.dumps(select()), delay=30))
        process = subprocess.Popen(
            [sys.executable, str(REPO / "manage.py"), "run_workflow", "Think long"],
            cwd=REPO, env=cli_env(var_dir, **model_settings(server)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert process.stdout is not None
        lines = []
        for line in process.stdout:  # wait until the round runs (its step opened)
            lines.append(json.loads(line))
            if lines[-1]["type"] == "step":
                break
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    events = lines + [json.loads(line) for line in out.splitlines()]
    assert process.returncode == 1, err[-2000:]
    assert "Traceback" not in err
    final = events[-1]
    assert (final["type"], final["payload"]["status"]) == ("run", "stopped")
    assert final["payload"]["reason"] == "Stopped by the user."
