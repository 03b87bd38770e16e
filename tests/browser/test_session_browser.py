"""A page opened in the middle of a streamed answer, and the tabs of a session that signs out,
in a real browser (Debian's Chromium through Playwright against a real Daphne)."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import ARTIFACTS, attach, send, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import extract_step, stop, taskplan

pytestmark = pytest.mark.browser

LONG_ANSWER = " ".join(f"word{n}" for n in range(120))


def test_a_page_opened_while_the_answer_streams_folds_its_finished_steps(
    page, app_url, model, tmp_path
):
    """The replay of a page opened mid-answer ends on a streamed piece, which is no swap:
    its finished steps still fold there (they stayed open until the answer ended)."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, "# Notes\n\nRevenue grew 12 percent.\n")
    steps = [taskplan("Summarise the notes"), *extract_step("docList:round1_upload"), stop()]
    model.add(
        *(FakeReply(content=json.dumps(step)) for step in steps),
        FakeReply(content=LONG_ANSWER, chunk_delay=0.15),  # about 18 s of streaming
    )
    send(page, "Summarise my notes")
    page.wait_for_selector("[id^=streaming-]")  # the answer is being written

    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("[id^=streaming-]")
    other.wait_for_function(
        "() => +document.getElementById('live').dataset.lastSeq >= "
        "+document.getElementById('live').dataset.storedSeq"
    )
    assert other.locator("[id^=streaming-]").count() == 1  # still streaming
    other.wait_for_selector("#step-1-1-1:not([open])", state="attached", timeout=3_000)
    other.screenshot(path=ARTIFACTS / "session-mid-answer.png")
    other.close()


def test_a_signed_out_sessions_other_tabs_say_so(page, app_url):
    """Signing out in one tab closes the session's other tabs' live connection, and their
    badge says "signed out" (it said "not allowed")."""
    sign_in_to_new_workflow(page, app_url)
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#connection[data-state=live]")
    page.click(".topbar-user button:has-text('Sign out')")
    other.wait_for_selector("#connection[data-state=refused]")
    assert other.inner_text("#connection") == "× signed out"


def test_files_waiting_to_be_sent_survive_a_reload_and_can_be_taken_back(page, app_url, tmp_path):
    """Attached files are still in the composer after a reload (they were stored, but the
    page forgot them), and × takes one back for good."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, "# A\n", name="a.md")
    attach(page, tmp_path, "# B\n", name="b.md")
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    names = page.locator("#attachments .chip-name").all_inner_texts()
    assert names == ["a.md", "b.md"]
    page.click("#attachments .upload-chip:has-text('b.md') .chip-remove")
    page.wait_for_selector("#attachments .upload-chip:has-text('b.md')", state="detached")
    assert page.locator("#attachments .upload-chip input:checked").count() == 1
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    assert page.locator("#attachments .chip-name").all_inner_texts() == ["a.md"]


def test_the_sidebar_follows_a_run_going_on_in_another_workflow(page, app_url, model):
    """A run goes on in workflow A while the reader is on workflow B: A's entry in B's
    sidebar says Running, then Completed when A ends, without a reload (it said Running for
    good)."""
    sign_in_to_new_workflow(page, app_url)
    first = page.url
    direct = {"approach": "direct", "overview": "chat", "tasks": []}
    model.add(FakeReply(content=json.dumps(direct), delay=4), FakeReply(content="Done."))
    send(page, "Plan something")
    page.wait_for_selector("#wf-status[data-status=running]")
    workflow = first.rstrip("/").split("/")[-1]
    page.locator("details.new-workflow").evaluate("panel => { panel.open = true; }")
    page.click("text=Create")  # workflow B
    page.wait_for_selector("#connection[data-state=live]")
    assert page.url != first
    status = f"#sidebar-status-{workflow}"
    assert page.inner_text(status) in ("Running", "Queued")
    page.wait_for_selector(f"{status}.status-completed, {status}.status-failed", timeout=20_000)


def test_an_unticked_file_stays_waiting_unticked_after_a_send(page, app_url, model, tmp_path):
    """Sending takes the ticked files with the message; an unticked one stays in the
    composer, still unticked, and only the ticked one reaches the round."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, "# A\n", name="a.md")
    attach(page, tmp_path, "# Secret\n", name="secret.md")
    page.uncheck("#attachments .upload-chip:has-text('secret.md') input")
    model.add(taskplan("Read a"), *extract_step("docList:round1_upload"), stop(), "Read.")
    send(page, "Read the file")
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert page.locator("#attachments .chip-name").all_inner_texts() == ["secret.md"]
    assert not page.is_checked("#attachments .upload-chip input")
    sent = page.locator("#timeline .message-user").inner_text()
    assert "a.md" in sent and "secret.md" not in sent
