"""Approvals in a real browser: an action that needs the user's approval waits with what it
will use shown (every parameter, URLs in full, the documents by name); nothing of it shows
as run before it is approved; Approve runs it, Reject does not, and the step says which."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import attach, send, settled_everywhere, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import params, review, select, stop, taskplan

pytestmark = pytest.mark.browser

APPROVAL = {"POWERON_APPROVAL_METHODS": "ai.process"}
NOTES = "# Notes\n\nRevenue grew 12 percent in Q3.\n"
URL = (
    "https://reports.example.org/2026/q3/revenue-and-costs/full-report.html?section=summary&lang=en"
)


def process_round(choice: str) -> list[FakeReply]:
    """Plan a task, choose ai.process over the upload with a prompt naming a long URL (it
    waits for approval); approved, it runs (its own model call) and the task stops; rejected,
    the task fails. Then the answer."""
    steps: list = [
        taskplan("Summarise the notes"),
        select(
            "ai.process",
            requiredInputDocuments=["docList:round1_upload"],
            parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
        ),
        params(aiPrompt=f"Compare the notes with {URL}"),
    ]
    if choice == "Approve":
        steps += ["Revenue grew 12 percent.", stop(True, "The notes are read."), "Done."]
    else:
        steps += [stop(False, "It was rejected."), review("failed"), "Not done."]
    return [FakeReply(content=s if isinstance(s, str) else json.dumps(s)) for s in steps]


def shown(page, selector: str) -> bool:
    """Whether the element is laid out (not hidden by the page's styles), folded or not."""
    return page.eval_on_selector(selector, "e => getComputedStyle(e).display !== 'none'")


@pytest.mark.parametrize("app_url", [APPROVAL], indirect=True)
@pytest.mark.parametrize("choice", ["Approve", "Reject"])
def test_an_action_waits_for_approval_with_what_it_will_use_and_runs_only_when_approved(
    page, app_url, model, tmp_path, choice
):
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, NOTES)
    model.add(*process_round(choice))
    send(page, "Summarise my notes")
    approval = page.wait_for_selector(".approval-waiting")
    card = approval.inner_text()
    assert "ai.process" in card
    assert URL in card  # the URL in full, not cut
    assert "notes.md" in card  # the document it will read, by name
    # Nothing of the action shows as run: its Act waits behind the card, nothing observed.
    assert page.locator("#step-1-1-1-act").count() == 1 and not shown(page, "#step-1-1-1-act")
    assert page.locator("#step-1-1-1 .phase-observe").count() == 0
    approve, reject = page.locator(".approval button").all()
    assert approve.bounding_box()["y"] == reject.bounding_box()["y"]  # side by side
    page.click(f".approval button:has-text('{choice}')")
    outcome = f".approval-{'approved' if choice == 'Approve' else 'rejected'}"
    page.wait_for_selector(outcome, state="attached")  # a step that succeeded folds away
    page.wait_for_selector("#wf-status:not([data-status=running])")
    step = page.locator("details.step").first
    badge = step.locator("summary .badge[data-state]").first.get_attribute("data-state")
    assert badge == ("success" if choice == "Approve" else "rejected"), badge
    if choice == "Approve":  # the action ran: its Act shows, after the approval
        assert shown(page, "#step-1-1-1-act")
        assert page.locator("#step-1-1-1 .phase-observe").count() == 1
        order = page.eval_on_selector(
            "#step-1-1-1-approval",
            "card => card.compareDocumentPosition(document.getElementById('step-1-1-1-act'))",
        )
        assert order & 4  # DOCUMENT_POSITION_FOLLOWING: the Act comes after the approval
    else:  # it never ran: said as rejected, and no Act
        assert "rejected" in page.inner_text("#step-1-1-1-approval")
        assert not shown(page, "#step-1-1-1-act")
        assert page.locator("#step-1-1-1 .phase-observe").count() == 0
    settled_everywhere(page)
