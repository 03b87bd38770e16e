"""Events stored before the typed contract are rewritten into it, so old workflows replay."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from workflows.events.contract import Envelope

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("workflows", "0001_initial")]
AFTER = [("workflows", "0002_events_to_the_typed_contract")]

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
