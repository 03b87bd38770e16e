"""The streamed answer gives way to the complete one without a jump, in a real browser: a
reader who scrolled back to read a paragraph while the answer streams finds it where it was
once the stored answer's render takes the streamed one's place, and the page never shows
both at once."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import send, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply

pytestmark = pytest.mark.browser

WATCH = """() => {
  window.__swap = { seen: [], moved: null, both: false };
  const paragraph = (root) => [...root.querySelectorAll(".content p")]
    .find((p) => p.textContent.startsWith("Paragraph 5:"));
  new MutationObserver(() => {
    const streaming = document.querySelector(".streaming");
    const whole = document.querySelector("article[id^=answer-]");
    if (streaming && whole) window.__swap.both = true;
    if (!whole) {
      const p = streaming && paragraph(streaming);
      if (p) window.__swap.seen.push(p.getBoundingClientRect().top);
      return;
    }
    if (window.__swap.moved !== null || !window.__swap.seen.length) return;
    const p = paragraph(whole);
    window.__swap.moved = p.getBoundingClientRect().top - window.__swap.seen.at(-1);
  }).observe(document.getElementById("timeline"), { childList: true, subtree: true });
}"""


def test_the_complete_answer_takes_the_streamed_ones_place_without_a_jump(page, app_url, model):
    """A reader scrolled back to paragraph 5 of a long answer still streaming (far from its
    end: the page no longer follows it) sees it at the same place in the window when the
    complete answer replaces the streamed one."""
    sign_in_to_new_workflow(page, app_url)
    text = "\n\n".join(f"Paragraph {n}: revenue grew in week {n}." for n in range(1, 81))
    chat = json.dumps({"overview": "chat", "tasks": []})  # no task: the model answers
    model.add(chat, FakeReply(content=text, chunk_delay=0.05))
    page.evaluate(WATCH)
    send(page, "Tell me about the weeks")
    page.wait_for_selector(".streaming .content p:has-text('Paragraph 30:')")
    # Reading: paragraph 5 brought to the middle of the window, the page no longer following.
    page.eval_on_selector(
        ".streaming .content p:has-text('Paragraph 5:')",
        """p => {
          let box = p.parentElement;  // the timeline, which scrolls on its own here
          while (box && !/auto|scroll/.test(getComputedStyle(box).overflowY)) {
            box = box.parentElement;
          }
          const by = p.getBoundingClientRect().top - innerHeight / 2;
          (box || document.scrollingElement).scrollBy(0, by);
        }""",
    )
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_function("() => window.__swap.moved !== null")
    swap = page.evaluate("() => window.__swap")
    assert not swap["both"], "the streamed and the complete answer were shown together"
    assert abs(swap["moved"]) <= 1, f"paragraph 5 moved {swap['moved']} px at the swap"
    model.assert_complete()
