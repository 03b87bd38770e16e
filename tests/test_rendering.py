"""One typed contract from the engine to the browser: every type stored, rendered in both
formats, undeclared fields and unknown types refused, model and web text sanitised."""

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from pydantic import ValidationError

from tests.support.page import parse
from tests.support.samples import samples
from workflows import services
from workflows.engine.records.events import BaseEvent, MessageEvent, ObserveEvent
from workflows.engine.records.schemas import Observation, Preview
from workflows.events.contract import EVENT_TYPES, Envelope, NoticeEvent, RunEvent, event_from
from workflows.events.rendering import render_event, template_for
from workflows.execution import recording

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(alice):
    workflow = services.workflow_create(owner=alice)
    return services.document_create(workflow=workflow, name="r.md", data=b"# R", label="x")


def test_every_event_type_has_a_sample_and_a_template(document):
    """Adding an event type without a template (or a sample here) fails this test."""
    assert set(samples(document.as_ref())) == set(EVENT_TYPES)
    for event_type in EVENT_TYPES:
        assert (Path(settings.BASE_DIR) / "templates" / template_for(event_type)).is_file()


def test_every_event_type_is_stored_and_rendered_in_both_formats(document):
    """Each type goes through the real recording path and comes back typed; its JSON and
    its HTML fragment are two renderings of the same envelope."""
    workflow_id = document.workflow_id
    for event_type, event in samples(document.as_ref()).items():
        if isinstance(event, NoticeEvent):
            envelope = Envelope(workflow=workflow_id, seq=None, event=event)
        else:
            envelope = recording.record(workflow_id, event)
            assert envelope.seq is not None and envelope.type == event_type
        data = json.loads(json.dumps(envelope.as_json()))
        assert set(data) == {"workflow", "seq", "type", "round", "task", "action", "payload", "at"}
        assert Envelope.from_json(data).event.type == event_type
        html = render_event(envelope)
        meta = parse(html)[0]
        assert meta.attrs["id"] == "event-meta" and meta.attrs["data-type"] == event_type
        assert meta.attrs["data-seq"] == ("" if envelope.seq is None else str(envelope.seq))
        if event_type == "run":  # the page says what a run that is not over waits on
            assert meta.attrs["data-role"] == envelope.event.status
        if envelope.at:  # when it was stored: the page times the current phase from it
            assert meta.attrs["data-at"] == str(int(envelope.at.timestamp()))


def test_the_contract_covers_every_event_class():
    """Every event model, the engine's and the host's, is one member of the union."""
    classes = set(BaseEvent.__subclasses__())
    assert {c.model_fields["type"].default for c in classes} == set(EVENT_TYPES)
    assert len(classes) == len(EVENT_TYPES)


def test_an_undeclared_field_or_an_unknown_type_fails_loudly():
    """The contract forbids what it does not declare, on the way in and on the way out."""
    with pytest.raises(ValidationError):
        RunEvent(round=1, status="completed", final=True)  # the old, untyped shape
    with pytest.raises(ValidationError):
        event_from("run", {"status": "completed", "final": True}, round=1, task=0, action=0)
    with pytest.raises(ValidationError):
        event_from("future_type", {}, round=1, task=0, action=0)


def test_an_invalid_event_is_never_committed(alice):
    """An event that does not read back into the contract rolls its transaction back."""
    workflow = services.workflow_create(owner=alice)
    bad = RunEvent.model_construct(round=1, task=0, action=0, type="run", status="maybe")
    with pytest.raises(ValidationError):
        recording.record(workflow.pk, bad)
    assert not workflow.events.exists()
    workflow.refresh_from_db()
    assert workflow.last_seq == 0


def envelope(event, seq=7):
    return Envelope(workflow=1, seq=seq, event=event)


def test_answer_markdown_is_sanitised():
    """A script tag or an event handler in the model's answer never reaches the page."""
    html = render_event(
        envelope(
            MessageEvent(
                round=1,
                key="round1_answer",
                role="assistant",
                messageId=3,
                content="**Done** <script>alert(1)</script> <img src=x onerror=alert(2)> "
                "[x](javascript:alert(3))",
            )
        )
    )
    assert "<strong>Done</strong>" in html
    assert "<script" not in html
    assert "<img" not in html
    assert 'href="javascript' not in html


def test_web_text_in_observations_is_escaped():
    """Snippets and notes from the web are text, never markup."""
    observation = Observation(
        success=True,
        resultLabel="round1_task1_action1_results",
        documentsCount=1,
        previews=[Preview(name="<b>x</b>", mime="text/html", snippet="<script>bad()</script>")],
        notes=["<img src=x onerror=alert(1)>"],
    )
    html = render_event(envelope(ObserveEvent(round=1, task=1, action=1, observation=observation)))
    assert "<script>bad()" not in html
    assert "&lt;script&gt;" in html
    assert "<img" not in html


def test_a_final_status_carries_its_state_as_data():
    """The page reads seq and the final status from attributes, not from text."""
    meta = parse(render_event(envelope(RunEvent(round=1, status="failed", reason="x"))))[0]
    assert meta.attrs["data-seq"] == "7" and meta.attrs["data-final"] == "failed"
    meta = parse(render_event(envelope(RunEvent(round=1, status="stopping"))))[0]
    assert "data-final" not in meta.attrs


def test_a_steps_cached_tokens_are_shown_beside_its_tokens():
    """A closed step says how many of its prompt tokens came from the provider's cache."""
    from workflows.engine.records.events import StepEvent

    step = StepEvent(
        round=1, task=1, action=2, status="success", step=2, method="web.search",
        durationMs=840, tokens=3100, cachedTokens=2048,
    )  # fmt: skip
    html = render_event(envelope(step))
    assert "success · 0.8 s · 3100 tok (2048 cached) · " in html
    assert "3100 tokens, 2048 of them cached" in html  # the chart's bar says it too
    plain = render_event(envelope(step.model_copy(update={"cachedTokens": 0})))
    assert "3100 tok · " in plain and "cached" not in plain


def test_a_question_cut_off_by_the_runs_end_says_so_once():
    """A step-limit question the run's end cut off says why in one phrase (it read "not
    answered: the run stopped before it was answered.")."""
    from workflows.engine.records.events import AskEvent

    cut_off = AskEvent(
        round=1, task=1, question="Continue?", stepsDone=5, status="cancelled",
        reason="the run stopped before it was answered",
    )  # fmt: skip
    text = " ".join(re.sub(r"<[^>]+>", " ", render_event(envelope(cut_off))).split())
    assert "Continue? — the run stopped before it was answered." in text
    unanswered = AskEvent(round=1, task=1, question="Continue?", stepsDone=5, status="cancelled")
    text = " ".join(re.sub(r"<[^>]+>", " ", render_event(envelope(unanswered))).split())
    assert "Continue? — not answered, so the task stopped here." in text


def test_an_approval_card_shows_what_the_action_will_use():
    """Every parameter whole (a URL in full, a list item by item), the documents by name
    (with the address a fetched one came from) and the connection; once rejected it says so."""
    from workflows.engine.records.events import ApprovalEvent
    from workflows.engine.records.protocols import DocumentRef

    url = "https://example.org/a/long/path/to/a/report.html?section=revenue&year=2026"
    fetched = DocumentRef(
        id="4", name="report.md", mime="text/markdown", label="x", source="fetched",
        sourceUrl=url,
    )  # fmt: skip
    notes = DocumentRef(id="5", name="notes.md", mime="text/markdown", label="round1_upload")
    waiting = ApprovalEvent(
        round=1, task=1, action=2, method="web.crawl", status="waiting",
        parameters={"format": "markdown", "seeds": [url, "https://example.org/b"]},
        documents=[fetched, notes], connection="my-tavily",
    )  # fmt: skip
    card = parse(render_event(envelope(waiting)))[1].elements[0]
    text = " ".join(card.text.split())
    assert "Approve web.crawl ?" in text
    assert f"seeds {url} https://example.org/b" in text and "format markdown" in text
    assert f"Documents report.md from {url} notes.md" in text
    assert "Connection my-tavily" in text
    rejected = waiting.model_copy(update={"status": "rejected"})
    line = " ".join(parse(render_event(envelope(rejected)))[1].text.split())
    assert line.startswith("rejected web.crawl was not run: you rejected it.")


def test_durations_read_in_one_style_everywhere_on_the_page():
    """A step's badge, its observation, a thought, the chart's bars and the table, and the
    round: seconds with one decimal, minutes from a minute on; never milliseconds beside
    seconds ("12085 ms" beside "46 s")."""
    from workflows.engine.records.events import RoundEvent, StepEvent, ThoughtEvent

    step = StepEvent(round=1, task=1, action=1, status="success", step=1, durationMs=12_085)
    thought = ThoughtEvent(
        round=1, task=1, number=1, thinking="t", nextThoughtNeeded=False, durationMs=430
    )
    observed = ObserveEvent(
        round=1, task=1, action=1, durationMs=46_000,
        observation=Observation(success=True, resultLabel="r1_results"),
    )  # fmt: skip
    ended = RoundEvent(round=1, status="completed", durationMs=125_400)
    pages = [render_event(envelope(event)) for event in (step, thought, observed, ended)]
    assert "success · 12.1 s · " in pages[0] and '<td class="align-right">12.1 s</td>' in pages[0]
    assert "Round 1, task 1, step 1: success, 12.1 s," in pages[0]
    assert "0.4 s · " in pages[1] and " · 46.0 s" in pages[2] and " · 2 min 5 s" in pages[3]
    assert not [page for page in pages if re.search(r"\d ms\b", page)]


def test_an_errors_operator_detail_is_for_staff_only():
    """A model failure's detail (the server's address, the setting to check) is rendered for
    a staff viewer only, is sent to staff sockets alone, and never in the public JSON; the
    message, for everyone, stays as it is."""
    from workflows.engine.records.events import ErrorEvent
    from workflows.events.broadcast import rendered
    from workflows.live.follow import Frame

    detail = "The model server at 10.1.2.3:8080 could not be reached. Check POWERON_LLM_BASE_URL."
    message = "The model could not be reached. Ask the administrator to check its settings."
    error = envelope(ErrorEvent(round=1, kind="model", message=message, detail=detail))
    everyone, staff = render_event(error), render_event(error, staff=True)
    assert message in everyone and "10.1.2.3" not in everyone and "POWERON_" not in everyone
    assert message in staff and f"For staff: {detail}" in staff
    assert "detail" not in error.as_json()["payload"]
    assert error.as_json(operator=True)["payload"]["detail"] == detail
    live = rendered(error)
    assert "10.1.2.3" not in live["json"] and "10.1.2.3" not in live["html"]
    assert Frame.live(live).html_for(staff=True) == staff
    assert Frame.live(live).html_for(staff=False) == everyone
    assert Frame.stored(error).html_for(staff=True) == staff
    plain = envelope(ErrorEvent(round=1, kind="tool", message="web.search: 500"))
    assert "html_staff" not in rendered(plain)


@pytest.mark.parametrize(
    ("ms", "said"),
    [(0, "0.0 s"), (430, "0.4 s"), (12_085, "12.1 s"), (59_949, "59.9 s"), (59_960, "1 min"),
     (125_400, "2 min 5 s"), (3_600_000, "60 min")],
)  # fmt: skip
def test_seconds_text(ms, said):
    """Durations for people: seconds with one decimal under a minute, then minutes."""
    from workflows.pricing import seconds_text

    assert seconds_text(ms) == said
