"""The chat by keyboard and screen reader, and on short and narrow screens, in a real browser:
what a run does is said once in a sentence (never re-read from a replay), focus goes to the
message box when the control that held it goes away, Escape closes the Tools panel, the
conversation keeps its room in a short window and a wide table scrolls in its own box.
"""

from __future__ import annotations

import json

import pytest

from tests.browser.test_accessibility_browser import NOTES, report_script
from tests.support.browser import ARTIFACTS, attach, send, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import select, taskplan

pytestmark = pytest.mark.browser

LISTEN = """() => {
  window.__said = [];
  new MutationObserver(() => {
    const text = document.getElementById("announcer").textContent;
    if (text) window.__said.push(text);
  }).observe(document.getElementById("announcer"),
    {childList: true, characterData: true, subtree: true});
}"""


def said(page) -> list[str]:
    return page.evaluate("() => window.__said")


def test_a_run_is_said_in_sentences_and_a_replay_is_not_said_again(page, app_url, model, tmp_path):
    sign_in_to_new_workflow(page, app_url)
    # An empty workflow: the message box has the cursor, to type at once.
    assert page.evaluate("() => document.activeElement.id") == "composer-text"
    assert page.get_attribute("#timeline", "aria-live") is None  # not every fragment read out
    page.evaluate(LISTEN)
    attach(page, tmp_path, NOTES)
    model.add(*report_script())
    send(page, "Summarise my notes in a report")
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_function("() => window.__said.some((t) => t.startsWith('Run '))")

    sentences = said(page)
    assert "Attached: notes.md." in sentences
    assert "Step 1 document.extract: success." in sentences
    assert "Step 2 document.generateReport: success." in sentences
    assert "The answer is ready." in sentences
    assert sentences[-1].startswith("Run Completed")
    assert len(sentences) <= 8, sentences  # milestones, not fragments
    assert page.get_attribute("#send-button", "aria-disabled") == "false"

    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    page.evaluate(LISTEN)
    page.wait_for_selector("#answer-round1_answer")
    page.wait_for_timeout(1_000)
    assert said(page) == []  # what was already there is read on the page, not said again
    # The answer's own headings sit under the page's: no h1 or h2 inside the conversation.
    assert page.eval_on_selector_all("#timeline h1, #timeline .markdown h2", "hs => hs.length") == 0
    assert page.inner_text("#timeline h2") == "Round 1"


def test_focus_returns_to_the_message_box_and_escape_closes_the_tools(page, app_url, model):
    sign_in_to_new_workflow(page, app_url)
    model.add(taskplan("Think long"), FakeReply(content=json.dumps(select()), delay=60))
    send(page, "Something slow")
    page.wait_for_selector("#wf-status[data-status=running]")
    assert page.get_attribute("#send-button", "aria-disabled") == "true"
    page.focus("#stop-button")
    page.keyboard.press("Enter")
    page.wait_for_selector("#wf-status[data-status=stopped]", timeout=5_000)
    page.wait_for_function("() => document.activeElement.id === 'composer-text'")  # not <body>

    page.focus(".tool-overview summary")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.querySelector('.tool-overview').open")
    page.keyboard.press("Escape")
    assert not page.evaluate("() => document.querySelector('.tool-overview').open")
    assert page.evaluate("() => document.activeElement.textContent") == "Tools"
    # A summary's focus ring is as clear as every other control's (it was 1px, half clear).
    ring = page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return [s.outlineWidth, s.outlineStyle, s.outlineColor]; }"
    )
    assert ring == ["3px", "solid", "rgb(28, 100, 209)"]


def test_a_short_window_keeps_the_conversation_and_a_wide_table_scrolls_alone(
    page, app_url, model, tmp_path
):
    page.set_viewport_size({"width": 910, "height": 512})  # 1366×768 at 150% zoom
    sign_in_to_new_workflow(page, app_url)
    table = "| " + " | ".join(f"column {n} heading" for n in range(9)) + " |\n"
    table += "|" + "---|" * 9 + "\n| " + " | ".join(f"value {n}" for n in range(9)) + " |\n"
    attach(page, tmp_path, NOTES)
    model.add(*report_script()[:-1], FakeReply(content=f"The figures:\n\n{table}"))
    send(page, "A table please")
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_selector("#timeline table")
    height = page.eval_on_selector("#timeline", "t => t.getBoundingClientRect().height")
    content = page.eval_on_selector("#timeline", "t => t.scrollHeight")
    assert height >= content - 1  # the page scrolls; the conversation is never squeezed
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 910  # nor widened
    page.screenshot(path=ARTIFACTS / "short-window.png", full_page=True)

    page.set_viewport_size({"width": 375, "height": 667})
    page.wait_for_timeout(200)
    sideways = page.eval_on_selector("#timeline", "t => t.scrollWidth - t.clientWidth")
    assert sideways <= 1, "the whole conversation scrolls sideways"
    assert page.eval_on_selector("#timeline table", "t => t.scrollWidth > t.clientWidth")
    page.screenshot(path=ARTIFACTS / "phone-table.png", full_page=True)
