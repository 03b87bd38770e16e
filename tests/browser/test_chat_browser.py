"""The chat in a real browser: Debian's Chromium driven by Playwright against Daphne.

The app runs as a real Daphne process on its own SQLite file; the model is the localhost
fake model server. Screenshots are saved under test-artifacts/ for people to look at.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.support.apps import PASSWORD
from tests.support.browser import (
    ARTIFACTS,
    attach,
    replayed,
    send,
    settled_everywhere,
    sign_in_to_new_workflow,
)
from tests.support.fake_openai import FakeReply
from tests.support.replies import cont, extract_step, params, review, select, stop, taskplan

pytestmark = pytest.mark.browser

NOTES = "# Notes\n\nRevenue grew 12 percent in Q3. Costs fell 3 percent.\n"
ANSWER = "The notes say revenue grew 12 percent while costs fell 3 percent."
CODE = "revenue = 1.12 * last_year"


def first_round_script() -> list:
    """Extract the upload, write a report, stop; each model call a little slow."""
    slow = 0.4
    report_select = select(
        "document.generateReport",
        requiredInputDocuments=["docList:round1_task1_action1_extracted"],
        parametersSchema={"fields": [{"name": "title", "type": "string", "required": True}]},
    )
    steps = [
        taskplan("Summarise the notes in a report"),
        *extract_step("docList:round1_upload"),
        cont("The report is missing."),
        report_select,
        params(title="Notes report"),
        "# Notes report\n\nRevenue grew 12 percent; costs fell 3 percent.\n",
        stop(True, "The report is written."),
    ]
    delayed = [
        FakeReply(content=s if isinstance(s, str) else json.dumps(s), delay=slow) for s in steps
    ]
    answer = f"{ANSWER}\n\n```python\n{CODE}\n```\n"
    return [*delayed, FakeReply(content=answer, chunk_delay=0.05)]


def test_live_run_reload_stop_and_download(page, app_url, model, tmp_path):
    """Sign in, upload, watch steps arrive one by one, reload mid-run, stop a second run,
    and download the produced report."""
    response = page.goto(app_url)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe" not in policy
    page.screenshot(path=ARTIFACTS / "01-login.png")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")

    attach(page, tmp_path, NOTES)
    model.add(*first_round_script())
    page.fill("#composer textarea", "Summarise my notes in a report")
    page.click("#send-button")

    # Steps appear one at a time while the answer is still to come; a line says what the
    # agent is doing and for how long.
    page.wait_for_selector("#step-1-1-1")
    page.wait_for_selector("#activity:not([hidden])")
    assert re.fullmatch(r"[A-Z][a-z ]+… \d+ s", page.inner_text("#activity"))
    assert page.locator("#answer-round1_answer").count() == 0
    page.wait_for_selector("#step-1-1-1-observe .badge-success")
    page.screenshot(path=ARTIFACTS / "02-first-step.png")
    assert page.locator("#answer-round1_answer").count() == 0  # the answer is still to come

    # Reload mid-run: the history is replayed and the run continues live, without duplicates.
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    page.wait_for_selector("#step-1-1-1")
    page.wait_for_selector("#answer-round1_answer")
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_selector("#activity", state="hidden")  # the run is over
    assert page.locator(".step").count() == 2
    assert page.locator("#timeline .message-user").count() == 1
    assert ANSWER in page.inner_text("#answer-round1_answer")
    # One click copies the answer, or one of its code blocks, as text.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    page.click("#answer-round1_answer header .copy-button")
    page.wait_for_selector("#answer-round1_answer header .copy-button:has-text('Copied')")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(ANSWER) and CODE in copied and "Copy" not in copied
    page.click("#answer-round1_answer pre .copy-button")
    page.wait_for_selector("#answer-round1_answer pre .copy-button:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    # A rating stays visible and can be changed; the export keeps it with its comment.
    feedback = "#answer-round1_answer form.feedback"
    page.click(f"{feedback} button[value='1']")
    page.wait_for_selector(f"{feedback} button[value='1'][aria-pressed=true]")
    page.fill(f"{feedback} input[name=comment]", "Too short")
    page.click(f"{feedback} button[value='-1']")
    page.wait_for_selector(f"{feedback} button[value='-1'][aria-pressed=true]")
    assert page.get_attribute(f"{feedback} button[value='1']", "aria-pressed") == "false"
    page.wait_for_function(
        "url => fetch(url).then(r => r.json()).then(data => data.messages.some("
        "m => m.feedback === -1 && m.feedbackComment === 'Too short'))",
        arg=page.url.rstrip("/") + "/export.json",
    )
    # The answer links the documents that really exist, from the host.
    assert "notes_report.pdf" in page.inner_text("#answer-round1_answer .answer-documents")
    # The per-step bars got their heights from their data (no style attribute in the HTML).
    heights = page.eval_on_selector_all(
        "#iterations .bar", "bars => bars.map(b => [b.dataset.value, b.style.height])"
    )
    assert heights and all(value and shown.endswith("%") for value, shown in heights), heights
    page.locator("#timeline").evaluate("el => el.scrollTop = 0")
    page.screenshot(path=ARTIFACTS / "03-completed.png")

    # The report downloads.
    link = page.locator("#answer-round1_answer a.doc-link", has_text="notes_report.md")
    with page.expect_download() as download_info:
        link.click()
    report = Path(download_info.value.path()).read_text()
    assert "Revenue grew 12 percent" in report
    assert "notes.md" in report  # its sources are listed

    # A second run is stopped while the model is still thinking. The reader scrolled up: the
    # view stays where they are and offers a jump to the latest instead.
    scrollable = page.eval_on_selector("#timeline", "p => p.scrollHeight - p.clientHeight")
    assert scrollable > 300, "the first round fills more than the pane"
    page.eval_on_selector("#timeline", "p => { p.scrollTop = 0; }")
    model.add(taskplan("Think long"), FakeReply(content=json.dumps(select()), delay=60))
    page.fill("#composer textarea", "Now something slow")
    page.click("#send-button")
    page.wait_for_selector("#check-2-1", state="attached")
    page.wait_for_selector("#jump-latest:not([hidden])")
    assert page.eval_on_selector("#timeline", "p => p.scrollTop") == 0
    page.click("#jump-latest")
    page.wait_for_selector("#jump-latest", state="hidden")
    assert (
        page.eval_on_selector("#timeline", "p => p.scrollHeight - p.scrollTop - p.clientHeight") < 5
    )
    page.wait_for_selector("#wf-status[data-status=running]")
    assert page.input_value("#composer textarea") == ""  # cleared once the round opened

    # Shift+Enter adds a line, Enter sends: a message sent while the run goes on is refused,
    # and the text is kept.
    page.fill("#composer textarea", "One more")
    page.press("#composer textarea", "Shift+Enter")
    page.type("#composer textarea", "thing")
    assert page.input_value("#composer textarea") == "One more\nthing"
    page.press("#composer textarea", "Enter")
    page.wait_for_selector("#notices .toast.error")
    assert "already running" in page.inner_text("#notices")
    assert page.input_value("#composer textarea") == "One more\nthing"

    # A steering note is confirmed at once, next to the composer, and leaves its box.
    page.fill("#steer-form input[name=text]", "Mind the costs")
    page.click("#steer-form button[type=submit]")
    page.wait_for_selector("#notices .toast:has-text('Steering note sent')")
    assert page.input_value("#steer-form input[name=text]") == ""

    clicked = time.monotonic()
    page.click("#stop-button")
    page.wait_for_selector("#wf-status[data-status=stopped]", timeout=5_000)
    stopped_after = time.monotonic() - clicked
    page.screenshot(path=ARTIFACTS / "04-stopped.png")
    assert "Stopped by the user" in page.inner_text("#round-2-status")
    print(f"stop shown after {stopped_after:.2f} s")

    # Rename in place: the header and the sidebar follow, and the form closes; the
    # workflow's other tab follows live, and a reload (which replays the user message that
    # first named the workflow) keeps the new title.
    other = page.context.new_page()
    other.goto(page.url)
    other.wait_for_selector("#connection[data-state=live]")
    last_seq = "() => +document.getElementById('live').dataset.lastSeq"
    before = page.evaluate(last_seq)
    page.click("#rename summary")
    page.fill("#rename-form input[name=title]", "Notes, summarised")
    page.press("#rename-form input[name=title]", "Enter")
    page.wait_for_selector("#wf-title:has-text('Notes, summarised')")
    assert "Notes, summarised" in page.inner_text(".sidebar")
    assert not page.locator("#rename").evaluate("panel => panel.open")
    other.wait_for_selector("#wf-title:has-text('Notes, summarised')")
    assert other.title() == "Notes, summarised · PowerOn"
    other.close()
    seq_above = "(n) => +document.getElementById('live').dataset.lastSeq > n"
    page.wait_for_function(seq_above, arg=before)  # the rename's own event came back
    renamed_at = page.evaluate(last_seq)
    page.reload()
    page.wait_for_function(seq_above, arg=renamed_at - 1)
    assert page.inner_text("#wf-title") == "Notes, summarised"
    assert page.inner_text(f"#sidebar-title-{page.url.rstrip('/').split('/')[-1]}") == (
        "Notes, summarised"
    )
    assert page.title() == "Notes, summarised · PowerOn"

    # The sidebar's search filters the list as one types (title and messages).
    page.fill(".workflow-search input[name=q]", "zzz-nothing")
    page.wait_for_selector("#workflow-list:has-text('No workflow matches')")
    page.fill(".workflow-search input[name=q]", "revenue")  # in the answer, not the title
    page.wait_for_selector("#workflow-list li.current:has-text('Notes, summarised')")


def test_at_max_steps_the_page_asks_and_continues(page, app_url, model, tmp_path):
    """With one step per task the page asks to continue; answering runs the next step."""
    sign_in_to_new_workflow(page, app_url, max_steps=1)
    attach(page, tmp_path, NOTES)
    model.add(
        taskplan("Summarise"),
        *extract_step("docList:round1_upload"),
        cont(),
        *extract_step("docList:round1_upload"),
        stop(),
        ANSWER,
    )
    page.fill("#composer textarea", "Summarise my notes")
    page.click("#send-button")
    page.wait_for_selector("form.ask")
    assert "reached 1 step." in page.inner_text("form.ask")
    page.fill("form.ask input[name=steps]", "1")
    page.click("form.ask button:has-text('Continue')")
    page.wait_for_selector("#step-1-1-2")
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert "continued for 1 more step" in page.inner_text(".ask-answer")
    assert page.locator("form.ask").count() == 0  # answered for every viewer
    assert page.inner_text("#wf-title") == "Summarise my notes"  # named by its first message
    page.screenshot(path=ARTIFACTS / "05-asked-and-continued.png")

    # Admin works under the same policy (the fixture fails the test on any violation).
    for path in ["/admin/", "/admin/workflows/chatworkflow/", "/admin/workflows/connection/add/"]:
        page.goto(app_url + path)
        page.wait_for_selector("#content")


def test_stop_here_ends_the_task_at_its_step_limit_with_the_work_kept(
    page, app_url, model, tmp_path
):
    """Stop here answers the question (whatever the steps box holds): the task stops at its
    limit, the extracted text stays, and the round ends with its answer."""
    sign_in_to_new_workflow(page, app_url, max_steps=1)
    model.add(taskplan("Summarise"), *extract_step("docList:round1_upload"), cont(),
              review("failed"), "Only the extraction was done.")  # fmt: skip
    attach(page, tmp_path, NOTES)
    send(page, "Summarise my notes")
    page.wait_for_selector("form.ask")
    page.fill("form.ask input[name=steps]", "")  # nothing to continue with: Stop here still works
    page.click("form.ask button:has-text('Stop here')")
    page.wait_for_selector("#wf-status[data-status=failed]")
    assert "stopped here." in page.inner_text(".ask-answer")
    assert page.locator("form.ask").count() == 0
    assert page.locator(".toast.error").count() == 0
    assert "Only the extraction was done." in page.inner_text("#timeline")
    page.wait_for_selector("#step-1-1-1 a[href*='/documents/']", state="attached")  # kept


def test_failures_and_a_stop_show_in_their_steps_and_every_badge_settles(page, app_url, model):
    """A Stage-1 failure, a Stage-2 failure and a stop each show inside their step, in plain
    words; after each end, and after a reload, nothing on the page says running."""
    sign_in_to_new_workflow(page, app_url)

    # Round 1: the model never writes a valid action selection; its review claims success.
    model.add(taskplan("Find the figures"), "not json", '{"action": 42}', review("success"))
    send(page, "Find the figures")
    page.wait_for_selector("#wf-status[data-status=failed]")
    errors = page.locator("#step-1-1-1 > .error")
    assert errors.count() == 2
    assert "produced no valid answer for the action selection" in errors.nth(0).inner_text()
    assert "Asking the model once more" in errors.nth(0).inner_text()
    assert page.get_attribute("#step-1-1-1-badge", "data-state") == "failed"
    assert "no valid action selection" in page.inner_text("#step-1-1-1-end")
    assert page.get_attribute("#task-1-1-status", "data-state") == "failed"
    answer = page.inner_text("#answer-round1_answer")
    assert "I could not complete this request. No step succeeded." in answer
    settled_everywhere(page)
    page.screenshot(path=ARTIFACTS / "06-failed-selection.png")

    # Round 2: Stage 2 leaves out a required parameter twice.
    think = select(
        "ai.process",
        parametersSchema={"fields": [{"name": "aiPrompt", "type": "string", "required": True}]},
    )
    model.add(taskplan("Think it over"), think, params(), params(), review("failed"))
    send(page, "Think it over")
    page.wait_for_selector("#round-2-status.status-failed")
    stage_two = " ".join(page.locator("#step-2-1-1 > .error").all_inner_texts())
    assert (  # in words for people (the model's corrective retry reads the validation path)
        "answer for the action parameters was not valid: the parameter aiPrompt is missing"
        in (stage_two)
    )
    assert "parameters.aiPrompt" not in stage_two
    assert "errors.pydantic.dev" not in stage_two and "**" not in page.inner_text("#round-2")
    assert page.get_attribute("#step-2-1-1-badge", "data-state") == "failed"
    settled_everywhere(page)

    # Round 3: stopped while the model chooses the first action.
    model.add(taskplan("Take your time"), FakeReply(content=json.dumps(select()), delay=60))
    send(page, "Take your time")
    page.wait_for_selector("#step-3-1-1-badge[data-state=running]")
    page.click("#stop-button")
    page.wait_for_selector("#wf-status[data-status=stopped]")
    assert page.get_attribute("#step-3-1-1-badge", "data-state") == "stopped"
    assert page.get_attribute("#task-3-1-status", "data-state") == "stopped"
    assert "Stopped by the user." in page.inner_text("#step-3-1-1-end")
    settled_everywhere(page)
    page.screenshot(path=ARTIFACTS / "07-stopped.png")
    # The chart's bars say how each step ended: failed and stopped in their own colours.
    colour = "bar => getComputedStyle(bar).backgroundColor"
    bars = ".outcome-failed .bar.duration"
    failed = page.eval_on_selector_all(bars, f"bars => bars.map({colour})")
    stopped = page.eval_on_selector(".outcome-stopped .bar.duration", colour)
    assert len(failed) == 2 and len(set(failed)) == 1 and stopped not in failed

    # After a reload the replayed page is just as settled.
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    page.wait_for_selector("#round-3-status.status-stopped")
    settled_everywhere(page)
    page.locator("#timeline").evaluate("el => el.scrollTop = 0")
    page.screenshot(path=ARTIFACTS / "08-reloaded-failed-and-stopped.png")


@pytest.mark.parametrize(
    "app_url",
    [{"POWERON_MAX_UPLOAD_BYTES": "1024", "POWERON_MAX_UPLOADS_PER_HOUR": "1"}],
    indirect=True,
)
def test_refused_uploads_say_why_on_the_page(page, app_url, tmp_path):
    """A file past the size limit is refused on the page before it is sent; one past the
    hourly rate is refused by the server (429) and its message shown too."""
    sign_in_to_new_workflow(page, app_url)
    large = tmp_path / "large.txt"
    large.write_bytes(b"x" * 2048)
    page.set_input_files("#file-picker", str(large))
    alert = page.wait_for_selector(".upload-errors")
    assert "The upload is too large: at most 1.0" in alert.inner_text()
    small = tmp_path / "small.txt"
    small.write_text("ok")
    page.set_input_files("#file-picker", str(small))
    page.wait_for_selector(".upload-chip")
    other = tmp_path / "other.txt"
    other.write_text("ok")
    page.set_input_files("#file-picker", str(other))
    page.wait_for_selector("text=Upload limit reached: at most 1 file an hour.")


def test_the_theme_follows_the_system_and_can_be_switched(page, app_url):
    """Dark when the system is dark; the topbar's button goes light → dark → system, and the
    choice outlives a reload."""

    def brightness() -> int:
        colour = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
        return sum(int(part) for part in re.findall(r"\d+", colour)[:3])

    page.emulate_media(color_scheme="dark")
    page.goto(app_url + "/login/")
    assert brightness() < 200 and page.inner_text("#theme-toggle") == "Theme: system"
    page.click("#theme-toggle")
    assert brightness() > 600 and page.inner_text("#theme-toggle") == "Theme: light"
    page.reload()
    assert brightness() > 600  # kept in this browser
    page.click("#theme-toggle")
    page.emulate_media(color_scheme="light")
    assert brightness() < 200 and page.inner_text("#theme-toggle") == "Theme: dark"
    page.click("#theme-toggle")
    assert brightness() > 600 and page.inner_text("#theme-toggle") == "Theme: system"


def rerun_script(upload: str, answer: str) -> list:
    """A round on the copied upload: extract it, stop, answer (each call a little slow)."""
    steps = [taskplan("Summarise"), *extract_step(f"docList:{upload}"), stop(True, "Done.")]
    delayed = [FakeReply(content=json.dumps(s), delay=0.3) for s in steps]
    return [*delayed, FakeReply(content=answer, chunk_delay=0.02)]


def test_steps_fold_ratings_stay_and_a_message_can_be_regenerated_or_edited(
    page, app_url, model, tmp_path
):
    """Finished steps fold to their summary line and open on a click; a rating is marked
    again after a reload; Regenerate and Edit open new rounds, each marked as a rerun, with
    the earlier rounds kept and only the latest answer offering Regenerate."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, NOTES)
    model.add(*first_round_script())
    send(page, "Summarise my notes in a report")
    page.wait_for_selector("#wf-status[data-status=completed]")

    # Both steps succeeded: folded to their summary line, which still tells the outcome.
    assert page.locator("details.step").count() == 2
    assert page.locator("details.step[open]").count() == 0
    assert "success" in page.inner_text("#step-1-1-1 > summary")
    assert not page.is_visible("#step-1-1-1-observe")
    page.click("#step-1-1-1 > summary")
    page.wait_for_selector("#step-1-1-1-observe .badge-success")

    # A rating comes back marked after a reload.
    feedback = "#answer-round1_answer form.feedback"
    page.fill(f"{feedback} input[name=comment]", "Clear")
    page.click(f"{feedback} button[value='1']")
    page.wait_for_selector("#notices .toast:has-text('feedback is saved')")
    page.reload()
    replayed(page)
    page.wait_for_selector(f"{feedback} button[value='1'][aria-pressed=true]")
    assert page.get_attribute(f"{feedback} button[value='-1']", "aria-pressed") == "false"
    assert page.input_value(f"{feedback} input[name=comment]") == "Clear"

    # Regenerate: round 2 runs round 1's message again, on a copy of its upload.
    model.add(*rerun_script("round2_upload", "A second answer, from round two."))
    page.click("#answer-round1_answer .regenerate button")
    page.wait_for_selector("#round-2 .message-user:has-text('round 1 again')")
    page.wait_for_selector("#answer-round2_answer")
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert "notes.md" in page.inner_text("#round-2 .message-user")
    assert not page.is_visible("#answer-round1_answer .regenerate button")  # latest only
    assert page.is_visible("#answer-round2_answer .regenerate button")

    # Edit round 1's message: round 3 runs it with the new text; rounds 1 and 2 stay.
    model.add(*rerun_script("round3_upload", "Only the costs: they fell 3 percent."))
    page.click("#edit-1 summary")
    page.fill("#edit-1 textarea", "Only the costs, please")
    page.click("#edit-1 button[type=submit]")
    page.wait_for_selector("#round-3 .message-user:has-text('edited from round 1')")
    page.wait_for_selector("#answer-round3_answer")
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert not page.locator("#edit-1").evaluate("panel => panel.open")  # closed once sent
    assert "Only the costs, please" in page.inner_text("#round-3 .message-user")
    assert page.locator("#timeline .message-user").count() == 3
    assert "Summarise my notes" in page.inner_text("#round-1 .message-user")
    settled_everywhere(page)
    page.screenshot(path=ARTIFACTS / "09-edited-and-regenerated.png")
    model.assert_complete()


def test_reasoning_shows_the_files_read_first_then_its_thoughts(page, app_url, model, tmp_path):
    """In Reasoning mode the attached notes are read first, as a step; the page shows that
    step above the thoughts, in the task they belong to, and misses no swap."""
    sign_in_to_new_workflow(page, app_url, mode="reasoning")
    attach(page, tmp_path, NOTES)
    plan = [{"description": "Read the notes", "status": "Done", "result": "12 percent"}]
    model.add(
        {"current_thinking": "Revenue grew 12 percent.", "planning": plan,
         "next_thought_needed": True},
        {"current_thinking": "The answer: revenue grew 12 percent.", "planning": plan,
         "next_thought_needed": False},
    )  # fmt: skip
    send(page, "What do my notes say about revenue?")
    page.wait_for_selector("#wf-status[data-status=completed]")
    step = page.locator("#task-1-1 #step-1-1-1").bounding_box()
    thoughts = [page.locator(f"#task-1-1 #thought-1-{n}").bounding_box() for n in (1, 2)]
    assert step["y"] < thoughts[0]["y"] < thoughts[1]["y"]
    # The chart has the thoughts too (their model calls' time and tokens), after the step.
    labels = page.eval_on_selector_all(".iteration-label", "ls => ls.map(l => l.textContent)")
    assert labels == ["1.1.1", "1.T1", "1.T2"]
    assert page.locator("#iterations .iteration.outcome-thought").count() == 2
    page.click(".chart-table summary")
    assert page.inner_text("#row-1-thought-2 td:nth-of-type(2)") == "conclusion"
    settled_everywhere(page)


def test_a_message_of_the_last_request_can_be_dismissed(page, app_url):
    """Deleting a workflow (after its confirmation) says so on the next page; the message
    can be dismissed, from the keyboard too."""
    sign_in_to_new_workflow(page, app_url)
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("form.inline-form button:has-text('Delete')")
    flash = page.wait_for_selector(".flash:has-text('Deleted')")
    page.focus(".flash .flash-close")
    page.keyboard.press("Enter")
    flash.wait_for_element_state("hidden")
    assert page.locator(".flash").count() == 0
