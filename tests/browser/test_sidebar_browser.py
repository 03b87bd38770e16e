"""The sidebar follows every run: a tab loaded before a workflow was even created shows its
run as running, then as waiting for you while its approval waits, then as it ended."""

from __future__ import annotations

import json
import threading

import pytest

from tests.support.browser import ARTIFACTS, attach, send, sign_in
from tests.support.replies import extract_step, stop, taskplan

pytestmark = pytest.mark.browser

APPROVAL = {"POWERON_APPROVAL_METHODS": "document.extract"}


@pytest.mark.parametrize("app_url", [APPROVAL], indirect=True)
def test_a_tab_loaded_before_a_run_follows_it_in_its_sidebar(page, app_url, model, tmp_path):
    sign_in(page, app_url)
    other = page.context.new_page()  # loaded before the workflow and its run exist
    other.goto(app_url)
    other.wait_for_selector("#workflow-list")

    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")
    workflow = page.get_attribute("#live", "data-workflow")
    status = f"#sidebar-status-{workflow}"
    released = threading.Event()  # the task plan is held until the other tab saw the run

    def held_plan(_body: dict) -> str:
        released.wait(60)
        return json.dumps(taskplan("Summarise the notes"))

    try:
        model.add(held_plan, *extract_step("docList:round1_upload"), stop(), "Done.")
        attach(page, tmp_path, "# Notes\n\nRevenue grew 12 percent.\n")
        send(page, "Summarise my notes")
        other.wait_for_selector(f"{status}.status-running")
        assert other.inner_text(status) == "Running"
    finally:
        released.set()

    other.wait_for_selector(f"{status}.status-waiting")
    assert other.inner_text(status) == "Waiting for you"
    page.wait_for_selector(f"{status}.status-waiting")  # its own tab says so too, live
    other.screenshot(path=ARTIFACTS / "sidebar-waiting.png")
    page.click(".approval button:has-text('Approve')")
    other.wait_for_selector(f"{status}.status-completed")
    assert other.inner_text(status) == "Completed"
    assert page.inner_text(status) == "Completed"
    assert other.evaluate("() => window.__oobMisses") == []
    other.close()
