"""What the page says, in a real browser: each line true to what happened and in words for
people. An Actionplan round's activity line follows its review (never "Choosing an action…"
after its plan is complete); a rejected action reads as rejected everywhere; a model's
invalid answer is said in sentences, not validation paths; durations in one style; the demo
model says what it cannot do and its rounds end failed, not completed; a failure's operator
detail (the model server's address, the setting to check) is shown to staff only; the
sign-in page says where the first account was printed only while it is the first run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.browser.test_accessibility_browser import blocking_violations
from tests.support.apps import ROOT, app_env
from tests.support.browser import attach, send, settled_everywhere, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import taskplan

pytestmark = pytest.mark.browser

NOTES = "# Notes\n\nRevenue grew 12 percent in Q3. Costs fell 3 percent.\n"


def planned(action: str, label: str, docs: list[str], **parameters) -> dict:
    return {
        "action": action,
        "actionObjective": f"Run {action}",
        "requiredInputDocuments": docs,
        "parameters": parameters,
        "resultLabel": label,
    }


def with_plan(objective: str, *actions: dict) -> dict:
    """A task plan of one task that carries its Actionplan action list."""
    return {**taskplan(objective), "firstAction": None, "plan": list(actions)}


def reply(content, **options) -> FakeReply:
    return FakeReply(
        content=content if isinstance(content, str) else json.dumps(content), **options
    )


def page_text(page) -> str:
    return page.evaluate("() => document.body.innerText")


APPROVAL = {"POWERON_APPROVAL_METHODS": "ai.process"}
SLOW_MACHINE = pytest.mark.timeout(300)  # a sign-in and a few rounds, on a busy machine too


@SLOW_MACHINE
@pytest.mark.parametrize("app_url", [APPROVAL], indirect=True)
def test_while_an_actionplan_review_is_written_the_activity_line_says_so(
    page, app_url, model, tmp_path
):
    """The plan completes; while its review is written (the call takes four seconds), the
    activity line says the task is reviewed (it said "Choosing an action…"); the step's
    duration reads in seconds."""
    sign_in_to_new_workflow(page, app_url, mode="actionplan")
    attach(page, tmp_path, NOTES)
    verdict = {"status": "success", "reason": "The notes are read.", "answer": "Read."}
    extract = planned("document.extract", "extract", ["docList:round1_upload"])
    model.add(reply(with_plan("Read the notes", extract)), reply(verdict, delay=4))
    send(page, "Read my notes")
    page.wait_for_selector(".notice-line.code-plan_complete")
    activity = page.locator("#activity")
    assert activity.is_visible() and activity.inner_text().startswith("Reviewing the task…")
    page.wait_for_selector("#wf-status[data-status=completed]")
    badge = page.inner_text("#step-1-1-1-badge")
    assert re.match(r"success · \d+\.\d s · ", badge), badge
    assert not re.search(r"\d ms\b", page_text(page))
    settled_everywhere(page)


@SLOW_MACHINE
@pytest.mark.parametrize("app_url", [APPROVAL], indirect=True)
def test_an_action_the_user_rejected_reads_as_rejected(page, app_url, model, tmp_path):
    """The user rejects the planned action and the review still says success: the step's
    badge says rejected (nothing says it failed), and the review's sentence says what
    happened and what the review judged (it said "no action succeeded")."""
    sign_in_to_new_workflow(page, app_url, mode="actionplan")
    attach(page, tmp_path, NOTES)
    prompt = "Compare the notes with last year"
    process = planned("ai.process", "cmp", ["docList:round1_upload"], aiPrompt=prompt)
    model.add(
        reply(with_plan("Compare", process)),
        reply({"status": "success", "reason": "Compared.", "answer": "Compared."}),
    )
    send(page, "Compare my notes with last year")
    page.click(".approval button:has-text('Reject')")
    page.wait_for_selector("#wf-status[data-status=failed]")
    assert page.get_attribute("#step-1-1-1-badge", "data-state") == "rejected"
    assert "failed" not in page.inner_text("#step-1-1-1")
    said = page_text(page)
    assert "Not done: the user rejected ai.process, although the review judged it a success." in (
        said
    )
    assert "no action succeeded" not in said
    settled_everywhere(page)


@SLOW_MACHINE
def test_a_models_invalid_answer_is_said_in_sentences(page, app_url, model):
    """An action plan invalid twice (a connection where there is none): the errors and the
    failed step say it in words, never as validation paths ("actions.0.requiredConnection:
    Input should be None")."""
    sign_in_to_new_workflow(page, app_url, mode="actionplan")
    bad = planned("web.search", "again", [], query="PowerOn")
    bad["requiredConnection"] = "nope"  # there is no connection: it must be empty
    model.add(reply(taskplan("Search")), reply({"actions": [bad]}), reply({"actions": [bad]}))
    model.add(reply({"status": "failed", "reason": "No plan."}))
    send(page, "Search for PowerOn")
    page.wait_for_selector("#wf-status[data-status=failed]")
    assert "in action 1, the connection must be empty" in page.inner_text("#task-1-1")
    said = page_text(page)
    assert "Input should be" not in said and "actions.0" not in said
    settled_everywhere(page)


DEMO = {"POWERON_LLM_BASE_URL": "", "POWERON_LLM_API_KEY": "", "POWERON_DEMO_DELAY_MS": "50"}
LONG_NOTES = "# Customers\n\n" + " ".join(
    f"Customer {n} renewed the contract and asked for the export to spreadsheets."
    for n in range(1, 12)
)


@SLOW_MACHINE
@pytest.mark.parametrize("app_url", [DEMO], indirect=True)
def test_the_demo_model_says_what_it_cannot_do_and_never_ends_completed_for_it(
    page, app_url, tmp_path
):
    """A message with nothing to read: the demo model says it cannot answer it, and the round
    fails. With a document it summarises, cut at a sentence's end (never "Cust…")."""
    sign_in_to_new_workflow(page, app_url)
    send(page, "Write a poem about the sea")
    page.wait_for_selector("#wf-status[data-status=failed]")
    answer = page.inner_text("#answer-round1_answer")
    assert "No language model is configured, so the demo model cannot answer this." in answer
    assert "ask the administrator to configure a model" in answer
    assert "Your message was" not in answer

    attach(page, tmp_path, LONG_NOTES, name="customers.md")
    send(page, "Summarise my notes")
    page.wait_for_selector("#wf-status[data-status=completed]")
    answer = page.inner_text("#answer-round2_answer").split("Files written:")[0].strip()
    assert answer.endswith("spreadsheets."), answer[-200:]
    assert "…" not in answer
    page.mouse.move(1, 1)
    assert blocking_violations(page, "demo, failed and completed") == []
    settled_everywhere(page)


@SLOW_MACHINE
@pytest.mark.parametrize("app_url", [DEMO], indirect=True)
def test_the_demo_models_reasoning_without_a_document_ends_unfinished(page, app_url):
    """In Reasoning mode without a document the demo model's thought says it cannot reason;
    the round ends failed with the step it left, never "The plan is complete"."""
    sign_in_to_new_workflow(page, app_url, mode="reasoning")
    send(page, "Plan a three-day trip to Rome")
    page.wait_for_selector("#wf-status[data-status=failed]")
    said = page_text(page)
    assert "The reasoning ended with 1 plan step not done: Solve the problem." in said
    assert "plan is complete" not in said.lower()
    assert "Plan a three-day trip" not in page.inner_text("#answer-round1_answer")
    assert page.locator("#activity").is_hidden()  # its plan says "Pending": it is not done


UNREACHABLE = {"POWERON_LLM_BASE_URL": "http://127.0.0.1:9/v1"}


@SLOW_MACHINE
@pytest.mark.parametrize("app_url", [UNREACHABLE], indirect=True)
def test_a_model_that_cannot_be_reached_names_its_server_to_staff_only(page, app_url, tmp_path):
    """The model's server is down. Alice, staff, reads the plain sentence and, under it, the
    server's address and the setting to check; once she is no longer staff the same stored
    error shows her the plain sentence alone, which asks the administrator. The sign-in page
    says where the first account was printed while nobody has signed in yet."""
    page.goto(app_url)
    assert "No one has signed in yet." in page.inner_text("footer.first-run")
    sign_in_to_new_workflow(page, app_url)
    send(page, "What is PowerOn?")
    page.wait_for_selector("#wf-status[data-status=failed]")
    error = page.locator(".error-model")
    plain = "The model could not be reached (tried 3 times). Ask the administrator"
    assert error.inner_text().startswith(plain)
    detail = error.locator(".operator-detail").inner_text()
    assert detail.startswith("For staff: The model server at 127.0.0.1:9 could not be reached")
    assert "POWERON_LLM_BASE_URL" in detail
    answer = page.inner_text("#answer-round1_answer")
    assert "127.0.0.1" not in answer and "POWERON_" not in answer
    page.mouse.move(1, 1)  # not over the Send button, whose hover colour is not the point
    assert blocking_violations(page, "operator detail, light") == []
    page.emulate_media(color_scheme="dark")
    assert blocking_violations(page, "operator detail, dark") == []

    demote = "from django.contrib.auth.models import User; " + (
        "User.objects.filter(username='alice').update(is_staff=False, is_superuser=False)"
    )
    env = app_env(tmp_path, "http://127.0.0.1:9/v1", **UNREACHABLE)
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", demote], cwd=ROOT, env=env, check=True
    )
    page.reload()
    page.wait_for_selector(".error-model")
    said = page_text(page)
    assert plain in said
    assert "127.0.0.1:9" not in said and "POWERON_" not in said and "For staff" not in said
    assert "127.0.0.1:9" not in page.content()
