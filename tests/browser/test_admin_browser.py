"""The admin as a browser draws it, at a desktop width in the light and the dark theme: the
index's Tools table shows each tool's name on one line, and a workflow's inline tables scroll
inside their box instead of making the page wider than the window. Screenshots go to
test-artifacts/.
"""

from __future__ import annotations

import pytest

from tests.support.browser import ARTIFACTS, attach, send, sign_in_to_new_workflow
from tests.support.replies import extract_step, stop, taskplan

pytestmark = pytest.mark.browser

WIDTH = 1280
# One long word (no place to break it) makes the messages' table wider than its box.
LONG_WORD = "quarterly_revenue_and_costs_for_the_board_meeting_of_november_final_version"


def run_a_round(page, app_url, model, tmp_path) -> None:
    """A finished round with an upload, an extraction and an answer: rows in every inline."""
    sign_in_to_new_workflow(page, app_url)
    attach(page, tmp_path, "# Notes\n\nRevenue grew 12 percent.\n")
    model.add(taskplan("Summarise"), *extract_step("docList:round1_upload"), stop(), "Done.")
    send(page, f"Summarise {LONG_WORD}")
    page.wait_for_selector("#wf-status[data-status=completed]")


def assert_theme(page, scheme: str) -> None:
    """The admin is drawn in `scheme` (its theme follows the browser's by default)."""
    red, green, blue = page.evaluate(
        "() => getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number)"
    )
    assert (red + green + blue < 200) == (scheme == "dark"), (scheme, red, green, blue)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_tool_names_read_on_one_line_and_inline_tables_scroll_in_their_box(
    page, app_url, model, tmp_path, scheme
):
    """Each tool's name on the index is one line (its box wider than tall); on a workflow's
    page the page is no wider than the window, while an inline table wider than its box
    scrolls inside it."""
    page.set_viewport_size({"width": WIDTH, "height": 900})
    page.emulate_media(color_scheme=scheme)
    run_a_round(page, app_url, model, tmp_path)

    page.goto(app_url + "/admin/")
    names = page.locator("#poweron-tools th code")
    assert names.count() >= 6
    for name in names.all():
        lines = name.evaluate("code => code.getClientRects().length")
        box = name.bounding_box()
        assert lines == 1 and box["width"] > box["height"], (name.inner_text(), lines, box)
    assert page.evaluate("() => document.scrollingElement.scrollWidth <= innerWidth")
    assert_theme(page, scheme)
    page.screenshot(path=ARTIFACTS / f"admin-index-{scheme}.png", full_page=True)

    page.goto(app_url + "/admin/workflows/chatworkflow/")
    page.click("th.field-__str__ a")
    page.wait_for_selector("#messages-group")
    widths = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    assert widths[0] <= widths[1], widths
    boxes = page.eval_on_selector_all(
        ".inline-group fieldset.module",
        "sets => sets.map(s => [s.id || s.getAttribute('aria-labelledby'), s.scrollWidth,"
        " s.clientWidth, s.getBoundingClientRect().right])",
    )
    assert len(boxes) == 3, boxes
    assert all(right <= WIDTH for *_, right in boxes), boxes
    # The messages' table is wider than its box (the long word): it scrolls there.
    messages = next(box for box in boxes if box[0].startswith("messages"))
    assert messages[1] > messages[2], boxes
    assert_theme(page, scheme)
    page.screenshot(path=ARTIFACTS / f"admin-workflow-{scheme}.png", full_page=True)
