"""Rewrite events stored before the typed contract into its shapes, so old workflows replay.

- a final or "stopping" `status` event becomes a `run` event;
- every step gets its `step` events: opened before its plan, closed after its refine (or
  before whatever follows it), carrying the duration and tokens the refine used to carry;
- message documents become document references (`attachments` of user messages too).

Events are renumbered per workflow (the inserted step events take seqs); no payload field
that the contract keeps is lost.
"""

from django.db import migrations

STEP_ENDERS = {"review", "task", "round", "run", "taskplan", "actionplan"}


def document_refs(payload, documents):
    """docItem strings and {id, name} attachments as DocumentRef dicts of stored documents."""
    refs = []
    for item in payload.pop("attachments", None) or payload.get("documents") or []:
        if isinstance(item, dict):
            document_id = str(item.get("id", ""))
        else:
            document_id = str(item).removeprefix("docItem:").split(":", 1)[0]
        document = documents.get(document_id)
        if document is not None:
            refs.append(
                {
                    "id": document_id,
                    "name": document.name,
                    "mime": document.mime_type,
                    "label": document.label,
                    "size": document.size,
                    "round": document.round,
                    "source": document.source,
                    "source_url": document.source_url or None,
                }
            )
    return refs


def upgrade(events, documents):
    """The events of one workflow, oldest first, in the contract's shapes: a list of
    (type, round, task, action, payload, created)."""
    out = []
    open_steps = {}

    def close(keys, created, ending=None):
        for key in keys:
            step = open_steps.pop(key)
            status = ending if ending and step["status"] == "open" else step["status"]
            status = "failed" if status == "open" else status
            payload = {"status": status, "step": step["step"], "method": step["method"]}
            payload.update(step["telemetry"])
            out.append(("step", *key, payload, created))

    for event in events:
        kind, payload = event.type, dict(event.payload or {})
        key = (event.round, event.task, event.action)
        if kind == "status" and "status" in payload:
            kind = "run"
            payload = {"status": payload["status"], "reason": payload.get("reason", "")}
        if kind in STEP_ENDERS or (kind == "plan" and key not in open_steps):
            ending = "stopped" if payload.get("status") in ("stopping", "stopped") else None
            close([k for k in open_steps if k != key], event.created, ending)
        if kind == "plan" and key not in open_steps:
            number = payload.get("step", 1)
            method = (payload.get("selection") or {}).get("action", "")
            out.append(("step", *key, {"status": "started", "step": number}, event.created))
            open_steps[key] = {"step": number, "method": method, "status": "open"}
            open_steps[key]["telemetry"] = {}
        elif kind == "refine":
            telemetry = {name: payload.pop(name) for name in ("durationMs", "tokens") if name in payload}
            if key in open_steps:
                open_steps[key]["telemetry"] = telemetry
        elif kind == "message":
            payload["documents"] = document_refs(payload, documents)
            if payload.get("role") == "action" and key in open_steps:
                open_steps[key]["status"] = payload.get("status") or "failed"

        out.append((kind, *key, payload, event.created))
        if kind == "refine" and key in open_steps:
            close([key], event.created)
    if open_steps:
        close(list(open_steps), events[-1].created)
    return out


def forwards(apps, schema_editor):
    ChatWorkflow = apps.get_model("workflows", "ChatWorkflow")
    WorkflowEvent = apps.get_model("workflows", "WorkflowEvent")
    ChatDocument = apps.get_model("workflows", "ChatDocument")
    for workflow in ChatWorkflow.objects.all().iterator():
        events = list(WorkflowEvent.objects.filter(workflow=workflow).order_by("seq"))
        if not events:
            continue
        documents = {str(d.pk): d for d in ChatDocument.objects.filter(workflow=workflow)}
        upgraded = upgrade(events, documents)
        WorkflowEvent.objects.filter(workflow=workflow).delete()
        rows = [
            WorkflowEvent(
                workflow=workflow,
                seq=seq,
                type=kind,
                round=round_,
                task=task,
                action=action,
                payload=payload,
            )
            for seq, (kind, round_, task, action, payload, _) in enumerate(upgraded, start=1)
        ]
        WorkflowEvent.objects.bulk_create(rows)
        for row, (*_, created) in zip(rows, upgraded, strict=True):
            row.created = created
        WorkflowEvent.objects.bulk_update(rows, ["created"])
        ChatWorkflow.objects.filter(pk=workflow.pk).update(last_seq=len(rows))


class Migration(migrations.Migration):
    dependencies = [("workflows", "0001_initial")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
