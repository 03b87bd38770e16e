"""Approvals in a real browser: an action that needs the user's approval waits with its
parameters shown; Approve runs it, Reject does not, and the step says which."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import attach, send, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import extract_step, stop, taskplan

pytestmark = pytest.mark.browser

APPROVAL = {"POWERON_APPROVAL_METHODS": "document.extract"}
NOTES = "# Notes\n\nRevenue grew 12 percent in Q3.\n"


def extract_round(answer: str) -> list[FakeReply]:
    """Plan a task, extract the upload (it waits for approval), stop, answer."""
    steps = [
        taskplan("Summarise the notes"),
        *extract_step("docList:round1_upload"),
        stop(True, "The notes are read."),
        answer,
    ]
    return [FakeReply(content=s if isinstance(s, str) else json.dumps(s)) for s in steps]


@pytest.mark.parametrize("app_url", [APPROVAL], indirect=True)
@pytest.mark.parametrize("choice", ["Approve", "Reject"])
def test_an_action_waits_for_approval_and_runs_only_when_approved(
    page, app_url, model, tmp_path, choice
):
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, NOTES)
    model.add(*extract_round("Revenue grew 12 percent."))
    send(page, "Summarise my notes")
    approval = page.wait_for_selector(".approval-waiting")
    assert "document.extract" in approval.inner_text()
    approve, reject = page.locator(".approval button").all()
    assert approve.bounding_box()["y"] == reject.bounding_box()["y"]  # side by side
    page.click(f".approval button:has-text('{choice}')")
    outcome = f".approval-{'approved' if choice == 'Approve' else 'rejected'}"
    page.wait_for_selector(outcome, state="attached")  # a step that succeeded folds away
    page.wait_for_selector("#wf-status:not([data-status=running])")
    step = page.locator("details.step").first
    badge = step.locator("summary .badge[data-state]").first.get_attribute("data-state")
    assert badge == ("success" if choice == "Approve" else "rejected"), badge
