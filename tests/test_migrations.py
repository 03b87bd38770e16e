"""Events stored before the typed contract, or before its names were camelCase, are rewritten
into it, so old workflows replay."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from workflows.events.contract import Envelope

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workflows", "0001_initial")]
AFTER = [("workflows", "0011_payloads_in_camel_case")]  # the contract as it is now

OLD_EVENTS = [
    ("message", 1, 0, 0, {"key": "user-1", "role": "user", "content": "Go", "messageId": 1,
                          "attachments": [{"id": "DOC", "name": "notes.md"}], "title": "Go"}),
    ("round", 1, 0, 0, {"status": "started", "mode": "react", "model": "m"}),
    ("task", 1, 1, 0, {"status": "running", "objective": "o"}),
    ("plan", 1, 1, 1, {"selection": {"action": "document.extract"}, "step": 1}),
    ("act", 1, 1, 1, {"method": "document.extract", "parameters": {}}),
    ("message", 1, 1, 1, {"key": "k", "role": "action", "content": "c", "status": "success",
                          "documents": ["docItem:DOC:notes.md"], "messageId": 2}),
    ("refine", 1, 1, 1, {"decision": "stop", "reason": "ok", "criteriaMet": True,
                         "durationMs": 1200, "tokens": 300}),
    ("plan", 1, 1, 2, {"selection": {"action": "web.search"}, "step": 2}),
    ("status", 1, 0, 0, {"status": "stopping", "reason": "Stop requested."}),
    ("status", 1, 0, 0, {"status": "stopped", "reason": "Stopped by the user.", "final": True}),
]  # fmt: skip


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def test_old_events_are_rewritten_into_the_contract(django_user_model):
    """Final statuses become run events, steps get their open and close events (with the
    refine's telemetry), document references become typed; every event validates."""
    old = migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="old")
    workflow = old.get_model("workflows", "ChatWorkflow").objects.create(owner_id=user.pk)
    document = old.get_model("workflows", "ChatDocument").objects.create(
        workflow=workflow, label="round1_upload", name="notes.md", mime_type="text/markdown",
        size=5, sha256="x", file="f.md", source="uploaded", round=1,
    )  # fmt: skip
    for seq, (kind, round_, task, action, payload) in enumerate(OLD_EVENTS, start=1):
        payload = {
            k: ([str(v).replace("DOC", str(document.pk)) for v in value] if k == "documents"
                else [{"id": document.pk, "name": "notes.md"}] if k == "attachments" else value)
            for k, value in payload.items()
        }  # fmt: skip
        old.get_model("workflows", "WorkflowEvent").objects.create(
            workflow=workflow, seq=seq, type=kind, round=round_, task=task, action=action,
            payload=payload,
        )  # fmt: skip
    try:
        new = migrate(AFTER)
        rows = list(new.get_model("workflows", "WorkflowEvent").objects.order_by("seq"))
        events = [Envelope.from_row(row).event for row in rows]  # every one validates
        kinds = [(e.type, getattr(e, "status", "")) for e in events]
        assert kinds == [
            ("message", ""), ("round", "started"), ("task", "running"),
            ("step", "started"), ("plan", ""), ("act", ""), ("message", "success"),
            ("refine", ""), ("step", "success"),
            ("step", "started"), ("plan", ""),
            ("step", "stopped"), ("run", "stopping"), ("run", "stopped"),
        ]  # fmt: skip
        assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
        assert (events[8].durationMs, events[8].tokens, events[8].method) == (
            1200,
            300,
            "document.extract",
        )
        assert [d.name for d in events[0].documents] == ["notes.md"]
        assert [d.id for d in events[6].documents] == [str(document.pk)]
        stored = new.get_model("workflows", "ChatWorkflow").objects.get(pk=workflow.pk)
        assert stored.last_seq == len(rows)
    finally:
        executor = MigrationExecutor(connection)
        migrate(executor.loader.graph.leaf_nodes())  # back to the latest for later tests


CAMEL_BEFORE = [("workflows", "0010_api_tokens")]

SNAKE_EVENTS = [
    ("usage", 1, 1, 1, {"kind": "select", "prompt_tokens": 120, "completion_tokens": 8,
                        "cached_tokens": 64, "latency_ms": 350, "model": "m", "cost": None,
                        "workflowTokens": 128}),
    ("document", 1, 1, 1, {"document": {"id": "7", "name": "a.html", "mime": "text/html",
                                        "label": "round1_task1_action1_pages", "size": 3,
                                        "round": 1, "source": "fetched",
                                        "source_url": "https://example.org/a"}}),
    ("message", 1, 1, 1, {"key": "k", "role": "action", "content": "c",
                          "documents": [{"id": "7", "name": "a.html", "mime": "text/html",
                                         "label": "l", "source_url": None}]}),
    ("approval", 1, 1, 2, {"method": "web.scrape", "parameters": {"source_url": "kept"},
                           "status": "waiting",
                           "documents": [{"id": "7", "name": "a.html", "mime": "text/html",
                                          "label": "l", "source_url": "https://example.org/a"}]}),
    ("thought", 1, 1, 0, {"number": 1, "thinking": "t", "nextThoughtNeeded": False,
                          "planning": [{"description": "a", "status": "Done", "result": None,
                                        "mark": None, "sub_steps": [
                                            {"description": "a.1", "status": "Pending",
                                             "result": None, "mark": None,
                                             "sub_steps": None}]}]}),
]  # fmt: skip


def test_snake_case_payloads_are_renamed_to_the_contracts_camel_case(django_user_model):
    """A model call's usage, a document reference's source URL and a thought's sub-steps
    stored in snake_case read back through the contract after the migration (an action's
    own parameters keep their names); going back restores the stored names."""
    old = migrate(CAMEL_BEFORE)
    user = old.get_model("auth", "User").objects.create(username="snake")
    workflow = old.get_model("workflows", "ChatWorkflow").objects.create(owner_id=user.pk)
    Event = old.get_model("workflows", "WorkflowEvent")
    for seq, (kind, round_, task, action, payload) in enumerate(SNAKE_EVENTS, start=1):
        Event.objects.create(
            workflow=workflow, seq=seq, type=kind, round=round_, task=task, action=action,
            payload=payload,
        )  # fmt: skip
    try:
        new = migrate(AFTER)
        rows = list(new.get_model("workflows", "WorkflowEvent").objects.order_by("seq"))
        usage, document, message, approval, thought = [Envelope.from_row(r).event for r in rows]
        assert (usage.promptTokens, usage.completionTokens) == (120, 8)
        assert (usage.cachedTokens, usage.latencyMs, usage.workflowTokens) == (64, 350, 128)
        assert document.document.sourceUrl == "https://example.org/a"
        assert message.documents[0].sourceUrl is None
        assert approval.documents[0].sourceUrl == "https://example.org/a"
        assert approval.parameters == {"source_url": "kept"}
        assert thought.planning[0].subSteps[0].description == "a.1"
        assert thought.planning[0].subSteps[0].subSteps == []
        migrate(CAMEL_BEFORE)
        back = [r.payload for r in Event.objects.order_by("seq")]
        assert back == [payload for *_, payload in SNAKE_EVENTS]
    finally:
        executor = MigrationExecutor(connection)
        migrate(executor.loader.graph.leaf_nodes())  # back to the latest for later tests
