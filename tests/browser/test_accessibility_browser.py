"""Accessibility and layout in a real browser: axe-core (bundled by axe-playwright-python, no
network) checks the login page, the home page and a finished workflow in the light and the
dark theme; the narrow layout, the per-step chart and table, and the Tools panel are checked
as a user would see them. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import json
import re

import pytest
from axe_playwright_python.sync_playwright import Axe

from tests.support.browser import ARTIFACTS, attach, send, sign_in, sign_in_to_new_workflow
from tests.support.fake_openai import FakeReply
from tests.support.replies import cont, extract_step, params, select, stop, taskplan

pytestmark = pytest.mark.browser

BLOCKING = {"serious", "critical"}
PRICED = {"POWERON_PRICE_INPUT": "2", "POWERON_PRICE_OUTPUT": "8", "POWERON_PRICE_CURRENCY": "USD"}
NOTES = "# Notes\n\nRevenue grew 12 percent in Q3. Costs fell 3 percent.\n"
ANSWER = "Revenue grew 12 percent while costs fell 3 percent."


def report_script() -> list[FakeReply]:
    """Extract the upload, write a report, stop, and answer with a code block."""
    steps = [
        taskplan("Summarise the notes in a report"),
        *extract_step("docList:round1_upload"),
        cont("The report is missing."),
        select(
            "document.generateReport",
            requiredInputDocuments=["docList:round1_task1_action1_extracted"],
            parametersSchema={"fields": [{"name": "title", "type": "string", "required": True}]},
        ),
        params(title="Notes report"),
        "# Notes report\n\nRevenue grew 12 percent; costs fell 3 percent.\n",
        stop(True, "The report is written."),
        f"{ANSWER}\n\n```python\nrevenue = 1.12 * last_year\n```\n\n- [x] Read the notes\n",
    ]
    return [FakeReply(content=s if isinstance(s, str) else json.dumps(s)) for s in steps]


def blocking_violations(page, where: str, context: str | None = None) -> list[str]:
    """axe's serious and critical findings on the page (or the `context` part of it) once
    its transitions have ended (a button fading in is not yet its colour), and any text whose
    contrast axe could not check because something overlaps it; the others are printed."""
    page.wait_for_function("() => document.getAnimations().length === 0")
    results = Axe().run(page, context=context)
    blocking = [
        f"{where}: contrast not checked: {' '.join(node['target'])}"
        for check in results.response["incomplete"]
        if check["id"] == "color-contrast"
        for node in check["nodes"]
        if "overlap" in node["any"][0]["message"]
    ]
    for violation in results.response["violations"]:
        targets = [
            f"{' '.join(node['target'])} ({node['failureSummary'].splitlines()[-1].strip()})"
            for node in violation["nodes"]
        ]
        line = f"{where}: {violation['id']} ({violation['impact']}) {violation['help']}: {targets}"
        if violation["impact"] in BLOCKING:
            blocking.append(line)
        else:
            print(line)
    return blocking


def run_report(page, model, tmp_path) -> None:
    """A finished round with two steps, a produced report and an answer with code."""
    attach(page, tmp_path, NOTES)
    model.add(*report_script())
    send(page, "Summarise my notes in a report")
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_selector("#answer-round1_answer pre code")


@pytest.mark.parametrize("app_url", [PRICED], indirect=True)  # costs on the page too
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_accessibility_violations(page, app_url, model, tmp_path, scheme):
    """Login, home, a new workflow (its example prompts), a finished workflow (steps,
    highlighted code, a task list, documents, a chosen rating, the chart's table and the Tools
    panel open) and the app's not-found page have no accessibility violation of serious or
    critical impact, and the contrast of all their text is checked (WCAG AA)."""
    page.emulate_media(color_scheme=scheme)
    found = []
    page.goto(app_url + "/login/")
    found += blocking_violations(page, "login")
    sign_in(page, app_url)
    found += blocking_violations(page, "home")
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")
    found += blocking_violations(page, "new workflow")  # with its example prompts
    run_report(page, model, tmp_path)
    page.click("#answer-round1_answer form.feedback button[value='1']")  # a chosen rating
    page.wait_for_selector("#answer-round1_answer button[value='1'][aria-pressed=true]")
    # Tall enough that nothing is scrolled out of its pane: axe checks the contrast of text
    # it can see whole, and the steps and the chart's table are open.
    page.set_viewport_size({"width": 1280, "height": 4000})
    page.eval_on_selector_all("details.step", "steps => steps.forEach((s) => { s.open = true; })")
    page.click(".chart-table summary")
    found += blocking_violations(page, "workflow")
    # The Tools panel lies over the page, which leaves axe unsure of its background: it is
    # checked laid out in the header (a script may set a style; the CSP allows it).
    page.click(".tool-overview summary")
    page.eval_on_selector(".tool-panel", "panel => { panel.style.position = 'static'; }")
    found += blocking_violations(page, "tools", context=".tool-overview")
    page.eval_on_selector(".tool-panel", "panel => { panel.style.position = ''; }")
    page.set_viewport_size({"width": 1280, "height": 900})
    workflow_url = page.url
    page.goto(app_url + "/workflows/999999/")  # the app's own page for what is not there
    found += blocking_violations(page, "not found")
    page.goto(workflow_url)
    page.wait_for_selector("#answer-round1_answer")
    # What the README shows (docs/screenshot*.png are copied from here): the steps folded
    # to their summaries, then the answer.
    page.click(".tool-overview summary")
    page.click(".chart-table summary")
    page.eval_on_selector_all("details.step", "steps => steps.forEach((s) => { s.open = false; })")
    page.locator("#timeline .task").first.evaluate("task => task.scrollIntoView()")
    page.wait_for_function("() => document.getAnimations().length === 0")
    page.screenshot(path=ARTIFACTS / f"screenshot-{scheme}.png")
    assert found == [], "\n".join(found)


def test_the_chart_and_its_table_show_every_step(page, app_url, model, tmp_path):
    """Each finished step gets a bar pair scaled to the largest so far and a table row with
    its action, status, duration and tokens, in the order of the steps."""
    sign_in_to_new_workflow(page, app_url)
    run_report(page, model, tmp_path)
    steps = page.eval_on_selector_all(
        "details.step", "steps => steps.map(s => s.querySelector('summary code').textContent)"
    )
    assert steps == ["document.extract", "document.generateReport"]
    page.click(".chart-table summary")
    rows = page.eval_on_selector_all(
        "#iteration-rows tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[:3] for row in rows] == [
        ["1.1.1", "document.extract", "success"],
        ["1.1.2", "document.generateReport", "success"],
    ]
    assert all(re.fullmatch(r"\d+\.\d s", row[3]) and int(row[4]) > 0 for row in rows), rows
    labels = page.eval_on_selector_all(".iteration-label", "ls => ls.map(l => l.textContent)")
    assert labels == ["1.1.1", "1.1.2"]
    # The largest duration and the largest token count fill the plot; the axes say how much.
    for kind in ["duration", "tokens"]:
        heights = page.eval_on_selector_all(
            f"#iterations .bar.{kind}", "bars => bars.map(b => b.style.height)"
        )
        assert "100%" in heights and len(heights) == 2, heights
    assert page.inner_text(".chart-axis-tokens span:first-child").endswith(" tok")
    assert page.locator(".chart-plot").bounding_box()["height"] >= 100


def test_the_tools_panel_fits_the_window(page, app_url):
    """At 1366 × 768 the open Tools panel lies inside the window and lists every tool, those
    left out with the POWERON_* variables to set."""
    page.set_viewport_size({"width": 1366, "height": 768})
    sign_in_to_new_workflow(page, app_url)
    page.click(".tool-overview summary")
    panel = page.wait_for_selector(".tool-panel")
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 1366, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= 768, box
    items = [item.bounding_box() for item in page.query_selector_all(".tool-list li")]
    assert len(items) == 6
    # A list, one tool under the other, each as wide as the panel allows.
    assert all(
        box["x"] <= item["x"] and item["x"] + item["width"] <= box["x"] + box["width"]
        for item in items
    ), items
    assert [item["y"] for item in items] == sorted({item["y"] for item in items})
    assert "POWERON_SEARCH_PROVIDER" in page.inner_text(".tool-off .tool-variables")
    page.screenshot(path=ARTIFACTS / "tools-panel.png")


@pytest.mark.parametrize("width", [1280, 390])
def test_attached_files_fit_the_composer_and_keep_their_parts_apart(page, app_url, tmp_path, width):
    """Each attachment is one chip inside the chat column: its box, name and size side by
    side (none drawn over another), a very long name cut short with the whole in its title."""
    page.set_viewport_size({"width": width, "height": 844})
    sign_in_to_new_workflow(page, app_url)
    long_name = "quarterly-" + "x" * 200 + ".txt"
    files = []
    for name in ("notes.txt", "plan.md", long_name):
        (tmp_path / name).write_text("Some text.")
        files.append(str(tmp_path / name))
    page.set_input_files("#file-picker", files)
    page.wait_for_selector(".upload-chip >> nth=2")
    composer = page.locator("#composer").bounding_box()
    for chip in page.query_selector_all(".upload-chip"):
        box = chip.bounding_box()
        assert composer["x"] <= box["x"] and box["x"] + box["width"] <= composer["x"] + (
            composer["width"] + 1
        ), (box, composer)
        parts = [chip.query_selector(s).bounding_box() for s in ("input", ".chip-name", "small")]
        for left, right in zip(parts, parts[1:], strict=False):
            assert left["x"] + left["width"] <= right["x"] + 0.5, parts  # side by side
    assert page.get_attribute(".upload-chip >> nth=2 >> .chip-name", "title") == long_name
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=ARTIFACTS / f"attachments-{width}.png")


def test_on_a_phone_the_chat_comes_first_and_the_list_opens_on_demand(page, app_url):
    """At 390 × 844 a workflow's chat takes the screen; the Workflows button of its bar (with
    aria-expanded, by mouse or keyboard) opens and closes the list, and a workflow picked
    there opens."""
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, app_url)
    toggle = "#sidebar-toggle"
    assert page.get_attribute(toggle, "aria-controls") == "sidebar"
    assert page.is_visible(".sidebar")  # no workflow yet: the list (and its form) shows
    page.fill("input[name=title]", "First")
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")
    page.goto(app_url + "/")
    page.click("details.new-workflow summary")
    page.fill("input[name=title]", "Second")
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")

    # The chat comes first: the composer is on the screen, the list is not.
    assert not page.is_visible(".sidebar")
    assert page.get_attribute(toggle, "aria-expanded") == "false"
    bar = page.locator(".chat-bar").bounding_box()
    assert bar["y"] < 120 and page.is_visible("#composer textarea")
    page.screenshot(path=ARTIFACTS / "narrow-chat.png")

    page.click(toggle)
    assert page.get_attribute(toggle, "aria-expanded") == "true"
    page.wait_for_selector(".sidebar", state="visible")
    page.screenshot(path=ARTIFACTS / "narrow-list.png")
    assert blocking_violations(page, "narrow") == []
    page.click(toggle)
    page.wait_for_selector(".sidebar", state="hidden")

    # By keyboard: Enter opens, Escape closes and leaves the focus on the button.
    page.focus(toggle)
    page.keyboard.press("Enter")
    page.wait_for_selector(".sidebar", state="visible")
    page.keyboard.press("Escape")
    page.wait_for_selector(".sidebar", state="hidden")
    assert page.evaluate("document.activeElement.id") == "sidebar-toggle"

    # Picking a workflow opens it, its chat first again.
    page.click(toggle)
    page.click(".workflow-list a:has-text('First')")
    page.wait_for_selector("#wf-title:has-text('First')")
    page.wait_for_selector("#connection[data-state=live]")
    assert not page.is_visible(".sidebar") and page.is_visible("#composer textarea")


DEMO = {"POWERON_LLM_BASE_URL": "", "POWERON_LLM_API_KEY": ""}


@pytest.mark.parametrize("app_url", [DEMO], indirect=True)
def test_the_demo_model_fills_the_window_and_its_chart_claims_no_tokens(page, app_url, tmp_path):
    """With no model configured (what `make run` starts with), the page says the demo model
    answers (in one line beside a workflow, opening on how to configure one); its header
    keeps its links on one line beside a long title; it holds in the window (the page itself
    does not scroll); the demo counts no tokens, so the chart's token axis labels only its
    zero, not "1 tok" twice over a flat axis."""
    sign_in_to_new_workflow(page, app_url)
    notice = page.locator(".notice")
    assert notice.locator("summary", has_text="No model configured").is_visible()
    assert notice.get_attribute("open") is None  # folded to its first line beside a workflow
    attach(page, tmp_path, NOTES)
    send(page, "Summarise my notes in a short report for the planning meeting of the team")
    page.wait_for_selector("#wf-status[data-status=completed]")
    assert page.locator(".model-badge.demo").inner_text() == "demo model"
    # The long title (the first message) wraps; the header's links each keep to one line.
    line = page.locator(".exports a").first.evaluate(
        "a => parseFloat(getComputedStyle(a).lineHeight)"
    )
    heights = page.eval_on_selector_all(".exports a", "links => links.map(a => a.offsetHeight)")
    assert all(height < 1.5 * line for height in heights), (heights, line)
    assert page.locator("#iterations .bar.duration").count() >= 1
    axis = page.eval_on_selector_all(".chart-axis-tokens span", "s => s.map(l => l.textContent)")
    assert axis == ["", "", "0"], axis
    assert page.inner_text(".chart-axis:not(.chart-axis-tokens) span:first-child").endswith("s")
    overflow = page.evaluate("() => document.documentElement.scrollHeight - window.innerHeight")
    assert overflow <= 0, f"the page scrolls by {overflow} px"
    assert page.locator("#composer textarea").is_visible()
    page.click(".notice summary")  # it opens on how to configure a model
    assert page.locator(".notice code", has_text="POWERON_LLM_BASE_URL").is_visible()
    page.emulate_media(color_scheme="dark")  # the notice keeps its light face, readable
    assert blocking_violations(page, "demo, dark", context=".notice") == []


@pytest.mark.parametrize("width", [1280, 390])
def test_a_reader_at_the_bottom_stays_there_when_a_long_answer_arrives(page, app_url, model, width):
    """The view follows the work while the reader is at the bottom, however much one event
    adds at once (a long answer rendered whole is taller than the pane's follow margin); on
    a narrow screen, where the page scrolls rather than the timeline, the page follows."""
    page.set_viewport_size({"width": width, "height": 800})
    sign_in_to_new_workflow(page, app_url)
    answer = "\n\n".join(f"Paragraph {n}: revenue grew in week {n}." for n in range(1, 41))
    replies = [{"overview": "chat", "tasks": []}, answer]  # no task: the model answers
    model.add(*[FakeReply(content=r if isinstance(r, str) else json.dumps(r)) for r in replies])
    send(page, "Tell me about the weeks")
    page.wait_for_selector("#wf-status[data-status=completed]")
    page.wait_for_selector("#answer-round1_answer", state="attached")
    pane = "#timeline" if width > 800 else "html"  # the page scrolls on a narrow screen
    gap = page.eval_on_selector(pane, "p => p.scrollHeight - p.scrollTop - p.clientHeight")
    assert page.eval_on_selector(pane, "p => p.scrollHeight > 2 * p.clientHeight")
    assert gap < 5, f"the view was left {gap} px above the end"
    assert page.locator("#jump-latest").is_hidden()
    assert page.locator("#composer textarea").is_visible()
