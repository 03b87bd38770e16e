"""A chat that feels finished, in a real browser: answers rendered as Markdown while they
stream (as the server renders them), copied as their Markdown, code copied exactly; example
prompts; files the readers cannot read refused when picked; a blank rename refused with a
message; a notice that goes when the run ends, never over the composer; the sidebar putting
the running workflow first; the chart folded and kept folded; Enter in an edit box runs it
again; on a phone the bar with the title and status stays in sight, and a workflow opens at
its latest round.
"""

from __future__ import annotations

import json

import pytest

from tests.support.browser import ARTIFACTS, send, sign_in, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import extract_step, stop, taskplan
from workflows.markdown import render_markdown_for_page

pytestmark = pytest.mark.browser

CODE = "revenue = 1.12 * last_year\n\tcosts = 0.97 * last_year  # kept as written"
ANSWER = f"""## Revenue and costs

The notes say **revenue grew 12 percent** while *costs fell 3 percent*.

1. Revenue: up 12 percent
2. Costs: down 3 percent
3. Margin: wider

- [x] Read the notes
- [ ] Compare with last year

```python
{CODE}
```

In short, a good quarter."""

# Markdown the browser's renderer must show exactly as the server's final render does: every
# construct the page renders, and what the sanitiser must strip.
CORPUS = [
    '# Title\n\nSome **bold**, *em*, `code` and a [link](https://example.org "t").\n\n'
    "1. one\n2. two\n\n- a\n- b\n\n> a quote\n\n---\n\n"
    "| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n",
    "[x](javascript:alert(1)) [y](ftp://host/x) [z](/local) [m](mailto:a@b.org) "
    '<script>alert(1)</script> <b onclick=x>b</b> ![img](http://x/y.png "t") '
    "<http://auto.link> &copy; &lt;i&gt;",
    "- [x] done *em*\n- [ ] todo\n\n1. [ ] numbered\n\n* [X] upper\n* [y] not a task\n",
    "### Three\n\n#### Four\n\n###### Six\n\nText.",
    "```\n<raw> & code\n```\n\n    indented code\n\n```nosuchlanguage\nx = 1\n```\n",
    "Setext\n===\n\nline  \nbreak\n\n* loose\n\n* list\n\n  continued\n\n3) three\n4) four\n",
    "Windows\r\nline ends\r\n\r\n- a\r\n- b\r\n\r\n## End\r\n",
]

CANON = """
  // The DOM as data: tags, sorted attributes and text (white space between blocks left out).
  function canonOf(parent, inPre) {
    const out = [];
    parent.childNodes.forEach((child) => {
      if (child.nodeType === 3) {
        if (inPre || child.textContent.trim()) out.push(child.textContent);
      } else if (child.nodeType === 1) {
        const attrs = Array.from(child.attributes, (a) => a.name + "=" + a.value).sort();
        const tag = child.tagName.toLowerCase();
        out.push([tag, attrs, canonOf(child, inPre || tag === "pre")]);
      }
    });
    return out;
  }
  const canon = (node) => canonOf(node, false);
"""

COMPARE = (
    """([corpus, server]) => {"""
    + CANON
    + """
  const parse = (html) => {
    const holder = document.createElement("template");
    holder.innerHTML = html;
    return holder.content;
  };
  const results = [];
  corpus.forEach((text, index) => {
    const whole = JSON.stringify(canon(parse(window.PowerOnMarkdown.render(text))));
    const expected = JSON.stringify(canon(parse(server[index])));
    // Streamed word by word, each prefix shows as that prefix rendered whole.
    const box = document.createElement("div");
    const stream = window.PowerOnMarkdown.stream(box);
    const pieces = text.split(/(?<=\\s)(?=\\S)/);
    let sofar = "";
    let streamed = "";
    for (const piece of pieces) {
      sofar += piece;
      stream.append(piece);
      stream.draw();
      const shown = JSON.stringify(canon(box));
      const alone = JSON.stringify(canon(parse(window.PowerOnMarkdown.render(sofar))));
      if (shown !== alone) {
        streamed = "after " + JSON.stringify(sofar) + ": " + shown + " != " + alone;
        break;
      }
    }
    results.push({ index, whole: whole === expected ? "" : whole + " != " + expected, streamed });
  });
  return results;
}"""
)


def answer_script() -> list[FakeReply]:
    """One task, one step (extract the notes), then the answer, streamed slowly."""
    steps = [taskplan("Summarise the notes"), *extract_step("docList:round1_upload"), stop()]
    return [
        *[FakeReply(content=json.dumps(s)) for s in steps],
        FakeReply(content=ANSWER, chunk_delay=0.15),
    ]


def test_the_browsers_render_is_the_servers_also_while_streaming(page, app_url):
    """What the page renders while an answer streams is what the server's final render
    shows (same parser, allow-list, classes and heading levels), for the whole text and for
    every prefix of it streamed word by word; a block once complete is drawn once and kept
    (its element stays the same while the answer grows)."""
    sign_in_to_new_workflow(page, app_url)
    server = [render_markdown_for_page(text) for text in CORPUS]
    results = page.evaluate(COMPARE, [CORPUS, server])
    assert [r for r in results if r["whole"] or r["streamed"]] == []
    kept = page.evaluate("""() => {
      const box = document.createElement("div");
      const stream = window.PowerOnMarkdown.stream(box);
      stream.append("# One\\n\\nFirst paragraph.\\n\\nSecond"); stream.draw();
      const first = box.querySelector("p");
      for (let n = 0; n < 50; n++) { stream.append("\\n\\nMore " + n); stream.draw(); }
      return [first === box.querySelector("p"), box.querySelectorAll("p").length];
    }""")
    assert kept == [True, 52]


def test_an_answer_streams_as_markdown_copies_as_markdown_and_the_page_keeps_its_word(
    page, app_url, model, tmp_path
):
    """A whole session on one workflow, checking what a user sees along the way."""
    sign_in(page, app_url)
    page.fill("input[name=title]", "Older")
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")
    older = page.url
    workflow = page.get_attribute("#live", "data-workflow")
    page.goto(app_url + "/")
    page.click("details.new-workflow summary")
    page.fill("input[name=title]", "Newer")
    page.click("text=Create")
    page.goto(older)
    page.wait_for_selector("#connection[data-state=live]")
    assert page.inner_text("#workflow-list li:first-child a") == "Newer"

    # An empty workflow offers example prompts; one click puts one in the message box.
    example = page.locator(".examples button").first
    prompt = example.get_attribute("data-prompt")
    example.click()
    assert page.input_value("#composer-text") == prompt
    page.fill("#composer-text", "")

    # Files the readers cannot read, and empty ones, are refused when picked, with why; the
    # others are attached. The picker offers only what the readers read.
    accept = page.get_attribute("#file-picker", "accept").split(",")
    assert ".pdf" in accept and ".md" in accept and ".png" not in accept
    (tmp_path / "red.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "notes.md").write_text("# Notes\n\nRevenue grew 12 percent.\n")
    page.set_input_files(
        "#file-picker", [str(tmp_path / n) for n in ("red.png", "empty.txt", "notes.md")]
    )
    refused = page.wait_for_selector(".upload-errors[role=alert]")
    assert "red.png cannot be read here: attach PDF, Word (.docx)" in refused.inner_text()
    assert "empty.txt is empty" in refused.inner_text()
    page.wait_for_selector(".upload-chip:has-text('notes.md')")
    assert page.locator(".upload-chip").count() == 1

    # A blank title is refused, and the form says so and stays open.
    page.click("#rename summary")
    page.fill("#rename-form input[name=title]", "   ")
    page.press("#rename-form input[name=title]", "Enter")
    page.wait_for_selector("#rename-error:has-text('A title cannot be empty.')")
    assert page.locator("#rename").evaluate("panel => panel.open")
    assert page.is_visible("#rename-error")
    page.press("#rename-form input[name=title]", "Escape")

    # The answer is Markdown while it streams: its heading and bold text show before the
    # complete answer replaces it, and its heading never shows as a raw ##.
    page.evaluate("""() => {
      window.__stream = { rendered: false, raw: false, whole: false };
      new MutationObserver(() => {
        const streaming = document.querySelector(".streaming .content");
        if (document.getElementById("answer-round1_answer")) window.__stream.whole = true;
        if (!streaming || window.__stream.whole) return;
        const shown = streaming.querySelector("h4") && streaming.querySelector("strong");
        if (shown) window.__stream.rendered = true;
        if (/##/.test(streaming.textContent)) window.__stream.raw = true;
      }).observe(document.getElementById("timeline"),
        { childList: true, subtree: true, characterData: true });
    }""")
    model.add(*answer_script())
    send(page, "Summarise my notes")
    # The running workflow moves to the top of the sidebar, without a reload.
    page.wait_for_selector(f"#workflow-list li:first-child #sidebar-title-{workflow}")
    page.wait_for_function("() => window.__stream.rendered")
    page.screenshot(path=ARTIFACTS / "answer-streaming.png")

    # A message sent while the run goes on is refused with a notice above the composer, not
    # over it; the notice goes when the run ends.
    page.fill("#composer-text", "One more thing")
    page.press("#composer-text", "Enter")
    toast = page.wait_for_selector("#notices .toast.error:has-text('already running')")
    box, composer = toast.bounding_box(), page.locator("#composer-text").bounding_box()
    assert box["y"] + box["height"] <= composer["y"], (box, composer)
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert page.locator("#notices .toast").count() == 0  # gone with the run's end
    assert page.evaluate("() => window.__stream") == {"rendered": True, "raw": False, "whole": True}

    # The final answer: code highlighted, task list items as disabled checkboxes.
    answer = "#answer-round1_answer"
    assert page.locator(f"{answer} pre code span.n").count() > 0
    boxes = page.locator(f"{answer} .task-list-item input[type=checkbox]")
    assert boxes.count() == 2 and all(boxes.nth(n).is_disabled() for n in range(2))
    assert boxes.nth(0).is_checked() and not boxes.nth(1).is_checked()

    # Copy gives the answer's Markdown (numbered list, heading, code fence) and, as rich text,
    # the answer as shown; a code block copies its code exactly.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=app_url)
    page.fill("#composer-text", "")
    page.click(f"{answer} header .copy-button")
    page.wait_for_selector(f"{answer} header .copy-button:has-text('Copied')")
    copied = page.evaluate("navigator.clipboard.readText()")
    # The answer as written, then the host's note of its check against the sources (a quote
    # the page shows under it, part of the stored answer).
    assert copied.startswith(ANSWER + "\n\n> Checked against the sources: "), copied
    assert "1. Revenue" in copied and "## Revenue" in copied and f"```python\n{CODE}\n```" in copied
    rich = page.evaluate("""async () => {
      const [item] = await navigator.clipboard.read();
      return item.types.includes("text/html") ? await (await item.getType("text/html")).text() : "";
    }""")
    assert "<ol>" in rich and "<h4>" in rich and "Copy" not in rich
    page.click(f"{answer} pre .copy-button")
    page.wait_for_selector(f"{answer} pre .copy-button:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == CODE

    # The chosen rating is pressed and looks it (filled), the other not.
    page.click(f"{answer} form.feedback button[value='1']")
    chosen = f"{answer} form.feedback button[value='1'][aria-pressed=true]"
    page.wait_for_selector(chosen)
    background = "el => getComputedStyle(el).backgroundColor"
    other = f"{answer} form.feedback button[value='-1']"
    assert page.get_attribute(other, "aria-pressed") == "false"
    assert page.eval_on_selector(chosen, background) != page.eval_on_selector(other, background)

    # The chart: a succeeded step's bars in the succeeded colour; folded, it stays folded
    # after a reload, and opens again.
    assert page.locator("#iterations .iteration.outcome-success").count() == 1
    page.click("#chart-toggle")
    assert page.get_attribute("#chart-toggle", "aria-expanded") == "false"
    assert not page.is_visible(".chart-plot")
    page.reload()
    page.wait_for_selector(f"{answer}")
    assert page.get_attribute("#chart-toggle", "aria-expanded") == "false"
    assert not page.is_visible(".chart-plot") and page.is_visible("#chart-toggle")
    page.click("#chart-toggle")
    page.wait_for_selector(".chart-plot", state="visible")

    # Enter in an edit box runs the edited message again (Shift+Enter adds a line).
    steps = [taskplan("Costs"), *extract_step("docList:round2_upload"), stop()]
    model.add(*[json.dumps(step) for step in steps], "Only the costs: down 3 percent.")
    page.click("#edit-1 summary")
    page.fill("#edit-1 textarea", "Only the costs")
    page.press("#edit-1 textarea", "Shift+Enter")
    page.type("#edit-1 textarea", "please")
    assert page.input_value("#edit-1 textarea") == "Only the costs\nplease"
    page.press("#edit-1 textarea", "Enter")
    page.wait_for_selector("#round-2 .message-user:has-text('edited from round 1')")
    page.wait_for_selector("#round-2-status.status-completed")
    assert "Only the costs" in page.inner_text("#round-2 .message-user")
    page.screenshot(path=ARTIFACTS / "answer-finished.png")
    model.assert_complete()


def test_on_a_phone_the_title_and_status_stay_in_sight_and_a_workflow_opens_at_its_last_round(
    page, app_url, model
):
    """At 390 × 844 the bar with ☰, the title and the status stays at the top of the screen
    while the page scrolls during a run; the steering field's placeholder fits; reloaded, the
    workflow opens at its latest round's start, not at the bottom."""
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in_to_new_workflow(page, app_url)
    long_answer = "\n\n".join(f"Paragraph {n}: revenue grew in week {n}." for n in range(1, 31))
    chat = json.dumps({"overview": "chat", "tasks": []})  # no task: the model answers
    model.add(chat, "A short first answer.", chat, FakeReply(content=long_answer, chunk_delay=0.05))
    send(page, "Briefly?")
    page.wait_for_selector("#answer-round1_answer")
    page.wait_for_selector("#wf-status[data-status=completed]")
    send(page, "Tell me about the weeks")
    page.wait_for_selector(".streaming")
    page.wait_for_function("() => document.scrollingElement.scrollHeight > 2 * innerHeight")
    page.evaluate("() => window.scrollTo(0, document.scrollingElement.scrollHeight)")
    page.wait_for_function("() => scrollY > 0")
    bar = page.locator(".chat-bar").bounding_box()
    assert bar["y"] == 0 and bar["height"] < 70, bar
    status = page.locator("#wf-status")
    assert status.get_attribute("data-status") == "running"
    badge = status.bounding_box()
    assert badge["y"] >= 0 and badge["x"] + badge["width"] <= 390, badge
    assert page.locator("#sidebar-toggle").bounding_box()["y"] >= 0
    fits = page.eval_on_selector(
        "#steer-form input[name=text]",
        """(input) => {
          const style = getComputedStyle(input);
          const ruler = document.createElement("canvas").getContext("2d");
          ruler.font = style.font;
          const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
          const room = input.clientWidth - padding;
          return [ruler.measureText(input.placeholder).width, room];
        }""",
    )
    assert fits[0] <= fits[1], f"the placeholder needs {fits[0]} px, the field has {fits[1]}"
    page.screenshot(path=ARTIFACTS / "phone-running.png")
    page.wait_for_selector("#answer-round2_answer")
    page.wait_for_selector("#wf-status[data-status=completed]")

    # Reloaded, the page opens at round 2's start (just under the bar), not at the bottom.
    page.evaluate("() => window.scrollTo(0, 0)")
    page.reload()
    page.wait_for_selector("#connection[data-state=live]")
    page.wait_for_selector("#answer-round2_answer")
    page.wait_for_function("() => scrollY > 0")
    top = page.locator("#round-2").bounding_box()["y"]
    bar = page.locator(".chat-bar").bounding_box()
    assert bar["y"] == 0 and bar["height"] <= top <= bar["height"] + 40, (top, bar)
    below = page.evaluate("() => document.scrollingElement.scrollHeight - scrollY - innerHeight")
    assert below > 500, f"the page opened {below} px from its bottom"
    page.screenshot(path=ARTIFACTS / "phone-reopened.png")
