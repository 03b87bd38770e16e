"""The engine's small parts: schemas, events, history order, defaults, guards, observations."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError, create_model

from workflows.engine.loop.answer import first_sentence
from workflows.engine.loop.defaults import DefaultsContext, apply_defaults
from workflows.engine.loop.guards import (
    UnsafeParameter,
    is_allowed,
    needs_approval,
    sanitize_parameters,
)
from workflows.engine.loop.observe import build_observation, summarize
from workflows.engine.prompting.history import render_history, reverse_chronological
from workflows.engine.records.events import (
    ENGINE_EVENTS,
    BaseEvent,
    Event,
    MessageEvent,
    event_adapter,
)
from workflows.engine.records.protocols import ActionResult, ProducedDocument, describe_error
from workflows.engine.records.references import result_label
from workflows.engine.records.schemas import ActionParameters, ActionSelection, Thought
from workflows.engine.records.state import Caps, HistoryEntry, Policy
from workflows.tools.documents.actions import DocumentExtractParameters
from workflows.tools.documents.process import AiProcessParameters
from workflows.tools.web.actions import ScrapeParameters as WebScrapeParameters
from workflows.tools.web.search import SearchParameters as WebSearchParameters

# --- schemas --------------------------------------------------------------------------------


def test_a_full_stage_one_answer_is_accepted() -> None:
    """action + objective + learnings + documents + connection + parametersSchema."""
    selection = ActionSelection.model_validate(
        {
            "action": "web.search",
            "actionObjective": "find",
            "learnings": ["l"],
            "requiredInputDocuments": ["docList:round1_uploads"],
            "requiredConnection": "mine",
            "parametersContext": "ctx",
            "parametersSchema": {"fields": [{"name": "query", "type": "string", "required": True}]},
        }
    )
    assert (selection.method, selection.name) == ("web", "search")


def test_stage_one_rejects_parameters() -> None:
    with pytest.raises(ValidationError, match="must not include `parameters`"):
        ActionSelection.model_validate({"action": "web.search", "parameters": {}})


@pytest.mark.parametrize(
    "name", ["documentList", "connectionReference", "history", "documents", "connections"]
)
def test_stage_one_schema_rejects_context_fields(name: str) -> None:
    with pytest.raises(ValidationError, match=name):
        ActionSelection.model_validate(
            {"action": "web.search", "parametersSchema": {"fields": [{"name": name}]}}
        )


def test_the_older_method_and_name_shape_is_a_fallback() -> None:
    selection = ActionSelection.model_validate({"action": {"method": "web", "name": "scrape"}})
    assert selection.action == "web.scrape"


def test_stage_one_forbids_undeclared_keys() -> None:
    with pytest.raises(ValidationError):
        ActionSelection.model_validate({"action": "web.search", "extra": 1})


def test_stage_two_shape_and_its_legacy_form() -> None:
    assert ActionParameters.model_validate({"parameters": {"q": 1}}).parameters == {"q": 1}
    dumped = ActionParameters(parameters={}).model_dump(by_alias=True)
    assert dumped == {"schema": "parameters_v1", "parameters": {}}
    with pytest.raises(ValidationError):
        ActionParameters.model_validate({"schema": "other", "parameters": {}})


def test_thoughts_hold_a_nested_plan() -> None:
    thought = Thought.model_validate(
        {
            "current_thinking": "t",
            "planning": [
                {"description": "a", "status": "Verification Needed", "mark": "unsure",
                 "sub_steps": [{"description": "a.1", "status": "Done", "result": "r"}]},
            ],
            "next_thought_needed": True,
        }
    )  # fmt: skip
    assert thought.planning[0].sub_steps[0].result == "r"  # type: ignore[index]


# --- events ---------------------------------------------------------------------------------


def test_every_event_type_round_trips_through_the_union() -> None:
    message = MessageEvent(round=1, task=2, action=3, key="k", role="action", content="c")
    data = message.model_dump(mode="json")
    assert {"type", "round", "task", "action"} <= data.keys()
    assert event_adapter.validate_python(data) == message


def test_events_forbid_undeclared_fields() -> None:
    with pytest.raises(ValidationError):
        event_adapter.validate_python(
            {"type": "status", "round": 1, "code": "info", "reason": "r", "x": 1}
        )


def test_the_union_covers_every_event_class() -> None:
    """Every event the engine defines is in its union (the host adds its own elsewhere)."""
    from typing import get_args

    members = get_args(get_args(Event)[0])
    engine = {c for c in BaseEvent.__subclasses__() if c.__module__ == BaseEvent.__module__}
    assert engine == set(members) == set(ENGINE_EVENTS)


# --- history --------------------------------------------------------------------------------


def entry(round: int, action: int, text: str = "") -> HistoryEntry:
    return HistoryEntry(
        role="action", round=round, task=1, action=action, summary=text or f"r{round}a{action}"
    )


def test_history_is_current_round_newest_first_then_older_rounds() -> None:
    entries = [entry(1, 1), entry(1, 2), entry(2, 1), entry(3, 1), entry(3, 2)]
    ordered = reverse_chronological(entries, current_round=3)
    assert [(e.round, e.action) for e in ordered] == [(3, 2), (3, 1), (2, 1), (1, 2), (1, 1)]


def test_history_lines_carry_documents_notes_summary_and_learnings() -> None:
    e = HistoryEntry(
        role="action", round=1, task=1, action=2, method="web.search", success=True,
        summary="found 3", documents_label="round1_task1_action2_search",
        documents=["docList:round1_task1_action2_search", "docItem:7:r.json"],
        notes=["3 results"], learnings=["use english"],
    )  # fmt: skip
    text = render_history([e], 1)
    assert text.startswith("<<<UNTRUSTED DATA from workflow history")  # may quote the web
    assert "\n- [r1 t1 a2] action web.search (success)" in text
    for part in ["summary: found 3", "documents: round1_task1_action2_search", "docItem:7:r.json",
                 "notes: 3 results", "learnings: use english"]:  # fmt: skip
        assert part in text


def test_history_is_cut_oldest_first() -> None:
    entries = [entry(1, n, "x" * 200) for n in range(1, 30)]
    text = render_history(entries, 1, max_chars=1000)
    assert "a29" in text and "a1]" not in text and "older entries omitted" in text


def test_a_long_workflows_history_keeps_two_rounds_in_full_five_in_a_line_and_counts_the_rest() -> (
    None
):
    entries: list[HistoryEntry] = []
    for number in range(1, 21):
        entries.append(HistoryEntry(role="user", round=number, content=f"question {number}"))
        entries.append(entry(number, 1))
        entries[-1].documents_label = f"round{number}_task1_action1_search"
        entries.append(HistoryEntry(role="assistant", round=number, content=f"answer {number}"))
    text = render_history(entries, 20)
    assert "[r20 t1 a1]" in text and "[r19 t1 a1]" in text  # this round and the one before
    assert "[r18 t1 a1]" not in text
    assert "- [r18] asked: question 18 → answered: answer 18" in text
    assert "(documents: docList:round18_task1_action1_search)" in text
    assert "[r14] asked" in text and "[r13]" not in text
    assert "(+13 earlier round(s), not shown)" in text
    # The size does not grow with the workflow: round 40 of the same shape is as long.
    longer = entries + [e.model_copy(update={"round": e.round + 20}) for e in entries]
    assert abs(len(render_history(longer, 40)) - len(text)) < 40


# --- defaults -------------------------------------------------------------------------------


def ctx(text: str, task_type: str = "general", language: str = "de") -> DefaultsContext:
    return DefaultsContext(language=language, task_type=task_type, text=text)


class FreeFormats(BaseModel):
    """An action whose expectedDocumentFormats are free text: no choices to fit a default to."""

    aiPrompt: str
    expectedDocumentFormats: list[str] | None = None


def test_the_user_language_is_the_default() -> None:
    params, applied = apply_defaults(WebSearchParameters, {"query": "q"}, ctx("find"))
    assert params["language"] == "de" and "language" in applied


def test_search_depth_is_advanced_for_analysis_and_basic_for_lookups() -> None:
    assert (
        apply_defaults(WebSearchParameters, {}, ctx("x", "analysis"))[0]["searchDepth"]
        == "advanced"
    )
    assert apply_defaults(WebSearchParameters, {}, ctx("x", "lookup"))[0]["searchDepth"] == "basic"
    assert (
        apply_defaults(WebSearchParameters, {}, ctx("Compare the vendors"))[0]["searchDepth"]
        == "advanced"
    )


def test_a_time_range_only_when_freshness_is_implied() -> None:
    stale, applied = apply_defaults(
        WebSearchParameters, {"timeRange": "year"}, ctx("History of Rome")
    )
    assert "timeRange" not in stale and "timeRange" in applied
    fresh, _ = apply_defaults(WebSearchParameters, {}, ctx("The latest news on PowerOn"))
    assert fresh["timeRange"] == "month"
    assert (
        apply_defaults(WebSearchParameters, {}, ctx("What happened today"))[0]["timeRange"] == "day"
    )


def test_markdown_unless_structured_output_is_asked() -> None:
    scraped, _ = apply_defaults(WebScrapeParameters, {}, ctx("read it"))
    assert scraped["format"] == "markdown"
    processed, _ = apply_defaults(
        FreeFormats,
        {"aiPrompt": "p", "expectedDocumentFormats": ["json"]},
        ctx("summarise"),
    )
    assert processed["expectedDocumentFormats"] == ["md"]
    # ai.process lists its formats, so the default is the one it accepts.
    narrative, _ = apply_defaults(
        AiProcessParameters, {"aiPrompt": "p", "expectedDocumentFormats": ["json"]}, ctx("sum up")
    )
    assert narrative["expectedDocumentFormats"] == ["markdown"]
    asked, _ = apply_defaults(
        AiProcessParameters, {"aiPrompt": "p", "expectedDocumentFormats": ["json"]}, ctx("as JSON")
    )
    assert asked["expectedDocumentFormats"] == ["json"]


def test_defaults_apply_only_to_fields_the_action_has() -> None:
    params, applied = apply_defaults(DocumentExtractParameters, {}, ctx("latest analysis"))
    assert params == {} and applied == []


# --- guards ---------------------------------------------------------------------------------


def test_policy_allow_and_deny_per_task_type() -> None:
    policy = Policy(allowed={"lookup": ["web.*"], "*": ["*"]}, denied={"*": ["web.crawl"]},
                    approval=["ai.*"])  # fmt: skip
    assert is_allowed(policy, "lookup", "web.search")
    assert not is_allowed(policy, "lookup", "ai.process")
    assert not is_allowed(policy, "research", "web.crawl")
    assert is_allowed(policy, "research", "ai.process") and needs_approval(policy, "ai.process")


@pytest.mark.parametrize(
    "params",
    [
        {"url": "file:///etc/passwd"},
        {"urls": ["https://ok.test", "javascript:alert(1)"]},
        {"query": "ftp://files.test/x"},
        {"url": "not a url"},
        {"url": "https://user:pw@example.test/"},
        {"filePath": "../../etc/passwd"},
        {"fileName": "/etc/shadow"},
    ],
)
def test_unsafe_parameters_are_refused(params: dict) -> None:
    with pytest.raises(UnsafeParameter):
        sanitize_parameters(params)


def test_safe_parameters_pass_trimmed() -> None:
    cleaned = sanitize_parameters(
        {"url": " https://example.test/a ", "query": "note: 10:00", "n": 3}
    )
    assert cleaned == {"url": "https://example.test/a", "query": "note: 10:00", "n": 3}


# --- observations ---------------------------------------------------------------------------


def test_the_result_label_format() -> None:
    assert result_label(2, 3, 4, "Search Results!") == "round2_task3_action4_search_results"


def test_observation_previews_are_short_and_at_most_five() -> None:
    docs = [
        ProducedDocument(name=f"{i}.md", mime="text/markdown", data=b"A sentence. " * 100)
        for i in range(7)
    ]
    observation = build_observation(
        ActionResult(success=True, documents=docs, notes=["seven docs"]),
        "round1_task1_action1_x",
        Caps(snippet_chars=50),
    )
    assert observation.documentsCount == 7 and len(observation.previews) == 5
    assert all(len(p.snippet) <= 50 for p in observation.previews)
    assert summarize("ai.process", observation).startswith("ai.process produced 7 document(s)")


def test_binary_previews_show_no_bytes() -> None:
    doc = ProducedDocument(name="a.pdf", mime="application/pdf", data=b"%PDF-1.7 \x00\x01")
    observation = build_observation(ActionResult(success=True, documents=[doc]), "l", Caps())
    assert observation.previews[0].snippet == "(application/pdf, 11 bytes)"


def test_a_failed_action_summary_says_why() -> None:
    observation = build_observation(ActionResult(success=False, error="timeout"), "l", Caps())
    assert summarize("web.scrape", observation) == "web.scrape failed: timeout"


def test_demo_answer_quotes_the_documents_not_their_markup() -> None:
    """The demo model's answer holds the documents' sentences and names the files it wrote,
    without extraction metadata, section markers or HTML source."""
    from workflows.engine.demo.policy import DemoLLM

    results = [  # the previews of an extraction and of a report
        (
            "notes.md",
            "# notes.txt _TEXT, 1 section(s)_ ## Text Revenue grew 12 percent. Costs fell.",
        ),
        ("report.md", "# Report _Compiled without a language model._ ## notes.md Revenue grew"),
        ("report.html", "<!doctype html> <html>"),
    ]
    answer = DemoLLM().final(results)
    assert "**notes.md**\n\nRevenue grew 12 percent. Costs fell." in answer
    assert "Files written: `report.md`, `report.html`." in answer
    for junk in ("_TEXT", "notes.txt", "## Text", "#", "<html", "doctype"):
        assert junk not in answer


def test_html_previews_show_the_visible_text() -> None:
    """An HTML document is previewed by its text, not its head, styles or tags."""
    from workflows.engine.loop.observe import snippet_of

    page = ProducedDocument(
        name="report.html",
        mime="text/html",
        data=b"<!doctype html><html><head><title>T</title><style>body{x:y}</style></head>"
        b"<body><h1>Report</h1><p>Revenue grew &amp; costs fell.</p></body></html>",
    )
    assert snippet_of(page, 280) == "Report Revenue grew & costs fell."


async def test_refine_sees_earlier_steps_fenced_as_data() -> None:
    """Step summaries quote documents and the web: the refine prompt fences them."""
    from tests.engine.conftest import collect, make_state, one_search_round

    llm = one_search_round()
    await collect(make_state(), llm)
    (refine,) = [call for call in llm.calls if call.kind == "refine"]
    prompt = refine.messages[-1]["content"]
    steps = prompt.split("## Steps so far in this task\n")[1]
    assert steps.lstrip().startswith("<<<UNTRUSTED DATA from earlier steps")


def test_the_documents_index_stays_bounded_in_a_long_workflow() -> None:
    """This round's documents are listed, the newest of earlier rounds too; older ones are
    counted (and still resolvable), and a long list is cut: the section stops growing."""
    from workflows.engine.prompting.prompts import render_documents
    from workflows.engine.records.protocols import DocumentRef
    from workflows.engine.records.references import resolve_references

    def refs(rounds: int) -> list[DocumentRef]:
        return [
            DocumentRef(id=f"{r}-{n}", name=f"page{n}.md", mime="text/markdown",
                        label=f"round{r}_task1_action{n // 5 + 1}_pages", round=r)
            for r in range(1, rounds + 1) for n in range(15)
        ]  # fmt: skip

    small, large = refs(2), refs(20)
    text = render_documents(large, current_round=20, caps=Caps())
    assert len(text) <= 1.5 * len(render_documents(small, current_round=2, caps=Caps()))
    assert "docItem:20-14:page14.md" in text  # this round: every list shown
    assert "+277 older document(s)" in text
    assert resolve_references(["docList:round1_task1_action1_pages"], large)  # still works


def test_the_documents_index_stays_bounded_in_a_long_task() -> None:
    """A task of many actions in one round: this round's newest labels are listed, its
    earlier results counted (and still resolvable), so the prompt stops growing."""
    from workflows.engine.prompting.prompts import render_documents
    from workflows.engine.records.protocols import DocumentRef
    from workflows.engine.records.references import resolve_references

    def refs(actions: int) -> list[DocumentRef]:
        return [
            DocumentRef(id=str(n), name=f"r{n}.md", mime="text/markdown",
                        label=f"round1_task1_action{n}_result", round=1)
            for n in range(1, actions + 1)
        ]  # fmt: skip

    caps = Caps()
    short = render_documents(refs(caps.documents_current_labels), current_round=1, caps=caps)
    assert "not listed" not in short  # a short task: everything is listed
    long = render_documents(refs(100), current_round=1, caps=caps)
    assert len(long) <= len(short) + 200
    assert "+88 earlier result(s) of this round under 88 label(s), not listed" in long
    assert "docList:round1_task1_action100_result" in long
    assert "docList:round1_task1_action88_result" not in long
    assert resolve_references(["docList:round1_task1_action1_result"], refs(100))


def test_steps_so_far_lists_the_newest_steps_and_counts_the_rest() -> None:
    """A long task's prompt lists its newest steps line by line; older ones are counted."""
    from workflows.engine.loop.core import STEPS_SHOWN, StepTrace, TaskState
    from workflows.engine.records.schemas import Observation, TaskItem

    task = TaskState(1, TaskItem(objective="o"))
    for n in range(1, 21):
        observation = Observation(success=True, resultLabel=f"l{n}")
        task.steps.append(StepTrace(n, "web.search", "o", observation, f"summary {n}"))
    text = task.steps_text(latest_observation=False)
    assert text.startswith(f"({20 - STEPS_SHOWN} earlier step(s) not shown)")
    assert "a20 web.search" in text and f"a{20 - STEPS_SHOWN + 1} " in text
    assert f"a{20 - STEPS_SHOWN} " not in text


def test_web_results_are_told_once_in_an_observation() -> None:
    """With findings, a JSON results document keeps its name but not a snippet repeating
    them; other documents keep their snippet."""
    from workflows.engine.records.protocols import WebFinding
    from workflows.engine.records.state import Caps

    result = ActionResult(
        success=True,
        documents=[
            ProducedDocument(name="search_results.json", mime="application/json", data=b"[1]"),
            ProducedDocument(name="page.md", mime="text/markdown", data=b"# Heat pumps grow"),
        ],
        findings=[WebFinding(url="https://example.test/1", title="Heat pumps", relevance=0.9)],
    )
    observation = build_observation(result, "round1_task1_action1_search", Caps())
    json_preview, page_preview = observation.previews
    assert json_preview.name == "search_results.json" and json_preview.snippet == ""
    assert "Heat pumps grow" in page_preview.snippet
    assert observation.findings[0].title == "Heat pumps"


def test_every_text_the_model_writes_is_capped() -> None:
    """Each string and list field of every model-written schema has a maximum length (except
    parameter values, which the action's own parameter model checks)."""
    import typing

    from pydantic import BaseModel

    from workflows.engine.records import schemas

    def capped(field) -> bool:
        return any(getattr(m, "max_length", None) for m in field.metadata)

    def text_like(annotation) -> bool:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if annotation is str or str in args:
            return True
        origin = typing.get_origin(annotation)
        return origin is list or any(typing.get_origin(a) is list for a in args)

    uncapped = []
    for model in vars(schemas).values():
        if not (isinstance(model, type) and issubclass(model, schemas.ModelOutput)):
            continue
        for name, field in model.model_fields.items():
            values = (schemas.ActionParameters, "parameters"), (schemas.PlannedAction, "parameters")
            if (model, name) in values or not text_like(field.annotation):
                continue
            items = typing.get_args(field.annotation)
            inner = [a for a in items if typing.get_origin(a) is list] or [field.annotation]
            item_types = typing.get_args(inner[0]) if typing.get_origin(inner[0]) is list else ()
            item_ok = all(
                issubclass(t, BaseModel) if isinstance(t, type) else bool(typing.get_args(t))
                for t in item_types
            )
            annotated = bool(getattr(field.annotation, "__metadata__", None)) or any(
                getattr(a, "__metadata__", None) for a in items
            )
            if not (capped(field) or annotated) or not item_ok:
                uncapped.append(f"{model.__name__}.{name}")
    assert uncapped == []


def test_a_reasoning_plan_is_bounded_in_size_and_depth() -> None:
    """A thought whose plan nests too deep or grows too large is rejected with a reason."""
    from workflows.engine.records.schemas import PLAN_DEPTH, PlanStep

    def nested(depth: int) -> PlanStep:
        step = PlanStep(description="leaf")
        for _ in range(depth - 1):
            step = PlanStep(description="node", sub_steps=[step])
        return step

    Thought(current_thinking="ok", planning=[nested(PLAN_DEPTH)], next_thought_needed=True)
    with pytest.raises(ValidationError, match="levels deep"):
        Thought(current_thinking="ok", planning=[nested(PLAN_DEPTH + 1)], next_thought_needed=True)


def test_an_answers_summary_drops_markdown_but_keeps_names():
    """Emphasis, code ticks, heading and quote marks go; the underscores of a name stay."""
    text = "> The **tool** `calc.echo_env` read _nothing_ from MY_KEY. Then it stopped."
    assert first_sentence(text) == "The tool calc.echo_env read nothing from MY_KEY."
    assert first_sentence("## __Done__\n\nAll good.") == "Done All good."


def test_a_long_list_of_choices_is_not_repeated_in_a_validation_message():
    """Naming an action outside a catalog of 40 is said in a line (the correction gives the
    valid values apart); a short list of choices is still said in full."""
    many = Literal[tuple(f"calc.tool_{n}" for n in range(40))]  # type: ignore[valid-type]
    few = Literal["web.search", "web.scrape"]

    def problem(choices: Any) -> str:
        model = create_model("Pick", action=(choices, ...))
        try:
            model(action="my_wiki.city_facts")
        except ValidationError as error:
            return describe_error(error)
        raise AssertionError("accepted")

    assert problem(many) == "action: 'my_wiki.city_facts' is not one of the allowed values"
    assert problem(few) == "action: Input should be 'web.search' or 'web.scrape'"


def test_an_observation_cut_to_size_keeps_what_could_not_be_read() -> None:
    """Notes and previews give way first; the inputs that could not be read are kept whole,
    and only as the last resort are the ones past three counted."""
    from workflows.engine.loop.observe import build_observation
    from workflows.engine.records.protocols import ActionResult, ProducedDocument
    from workflows.engine.records.state import Caps

    unread = [f"scan{n}.png has an unsupported type (image/png)" for n in range(10)]
    result = ActionResult(
        success=True,
        documents=[ProducedDocument(name=f"d{n}.md", mime="text/markdown", data=b"x" * 900)
                   for n in range(5)],
        notes=[f"note {n} " + "y" * 150 for n in range(8)],
        unread=unread,
    )  # fmt: skip
    roomy = build_observation(result, "r", Caps(observation_chars=1_500))
    assert roomy.unread == unread and len(roomy.notes) < 8
    tight = build_observation(result, "r", Caps(observation_chars=600))
    assert tight.unread == [*unread[:3], "… and 7 more input(s) not read"]


def test_a_decision_that_may_carry_the_answer_has_room_for_it() -> None:
    """Refine and the review may write the round's answer: each call's token limit holds an
    answer as long as the answer call's (the review's was 400, so Actionplan's answers were
    cut off, then asked for again)."""
    from workflows.engine.model.transport import MAX_TOKENS

    assert MAX_TOKENS["refine"] >= MAX_TOKENS["final"] + 400
    assert MAX_TOKENS["review"] >= MAX_TOKENS["final"] + 400
