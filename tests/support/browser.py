"""Helpers for the browser tests: sign in, send, and check that nothing still says it runs."""

from __future__ import annotations

from tests.support.apps import PASSWORD, ROOT

ARTIFACTS = ROOT / "test-artifacts"
"""Where screenshots and the Daphne log of the last browser test go."""

STILL_GOING = "/\\b(running|started|pending)\\b|writing…|choosing an action…/i"


def settled_everywhere(page) -> None:
    """Nothing on the page says a run is going, and no swap missed its target."""
    text = page.evaluate("() => document.body.innerText")
    still = page.evaluate(f"(t) => (t.match({STILL_GOING}) || [])[0] || ''", text)
    assert still == "", f"the page still says {still!r} after the run ended"
    states = page.eval_on_selector_all("[data-state]", "els => els.map(e => e.dataset.state)")
    assert not {"running", "started", "pending"} & set(states), states
    assert page.evaluate("() => window.__oobMisses") == []


def sign_in(page, app_url) -> None:
    """Sign in as alice; the page with the workflows' sidebar is shown."""
    page.goto(app_url)
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector(".sidebar")


def sign_in_to_new_workflow(
    page, app_url, *, max_steps: int | None = None, mode: str | None = None
) -> None:
    """Sign in as alice and create a workflow (in `mode`, with `max_steps` per task), live."""
    sign_in(page, app_url)
    if max_steps is not None or mode is not None:
        page.locator("details.new-workflow").evaluate("panel => { panel.open = true; }")
    if max_steps is not None:
        page.fill("input[name=max_steps]", str(max_steps))
    if mode is not None:
        page.select_option("select[name=mode]", mode)
    page.click("text=Create")
    page.wait_for_selector("#connection[data-state=live]")


def attach(page, tmp_path, text: str, name: str = "notes.md") -> None:
    """Attach a file holding `text` to the next message; wait until it is uploaded."""
    path = tmp_path / name
    path.write_text(text)
    page.set_input_files("#file-picker", str(path))
    page.wait_for_selector(".upload-chip")


def send(page, text: str) -> None:
    page.fill("#composer textarea", text)
    page.click("#send-button")


def replayed(page) -> None:
    """Wait until the page has drawn what was stored when it loaded (then it has opened at
    its latest round: what is clicked next stays where it is)."""
    page.wait_for_function(
        "() => { const live = document.getElementById('live');"
        " return +live.dataset.lastSeq >= +live.dataset.storedSeq; }"
    )
