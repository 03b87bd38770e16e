"""A step reads in the order things happened, live and after a reload: a Stage-1 answer the
engine rejected shows before the step's plan and its Act, not after Refine; a step-limit
question and "Continuing for …" stand between the steps they separate."""

from __future__ import annotations

import pytest

from tests.support.browser import (
    ARTIFACTS,
    attach,
    send,
    settled_everywhere,
    sign_in_to_new_workflow,
)
from tests.support.replies import cont, extract_step, select, stop, taskplan

pytestmark = pytest.mark.browser

NOTES = "# Notes\n\nRevenue grew 12 percent in Q3.\n"

# What each thing in a step or a task is, by its class; the step's own summary line left out.
KINDS = """(box) => Array.from(box.children).filter((c) => c.tagName !== "SUMMARY").map((c) =>
  ["error", "phase-plan", "phase-act", "phase-observe", "document-line", "summary",
   "phase-refine", "step-end", "step", "ask-answer", "ask", "notice-line", "review"]
    .find((k) => c.classList.contains(k)) || c.className)"""


def kinds(page, selector: str) -> list[str]:
    return page.eval_on_selector(selector, KINDS)


def test_a_rejected_selection_shows_before_the_act_and_a_question_between_its_steps(
    page, app_url, model, tmp_path
):
    sign_in_to_new_workflow(page, app_url, max_steps=1)
    attach(page, tmp_path, NOTES)
    model.add(
        taskplan("Summarise the notes"),
        select("file.delete"),  # not an action of the catalog: rejected, asked once more
        *extract_step("docList:round1_upload"),
        cont("Read it once more."),
        *extract_step("docList:round1_upload"),
        stop(True, "The notes are read."),
        "Revenue grew 12 percent.",
    )
    send(page, "Summarise my notes")
    page.wait_for_selector("form.ask")
    page.fill("form.ask input[name=steps]", "1")
    page.click("form.ask button:has-text('Continue')")
    page.wait_for_selector("#wf-status[data-status=completed]")
    live_step, live_task = kinds(page, "#step-1-1-1"), kinds(page, "#task-1-1-steps")
    assert live_step[:3] == ["error", "phase-plan", "phase-act"], live_step
    assert live_step.index("error") < live_step.index("phase-refine")
    page.locator("#step-1-1-1").evaluate("step => { step.open = true; }")  # folded: done
    rejected = page.locator("#step-1-1-1 > .error").bounding_box()
    act = page.locator("#step-1-1-1-act").bounding_box()
    assert rejected["y"] < act["y"]  # seen above the Act, as it happened
    page.locator("#step-1-1-1").screenshot(path=ARTIFACTS / "reading-order-step.png")
    assert live_task == ["step", "ask-answer", "notice-line", "step", "review"], live_task
    assert "Continuing for 1 more step" in page.inner_text("#task-1-1-steps > .notice-line")

    # A reload replays the stored events into the same order.
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    page.wait_for_selector("#round-1-status.status-completed")
    assert kinds(page, "#step-1-1-1") == live_step
    assert kinds(page, "#task-1-1-steps") == live_task
    settled_everywhere(page)
