"""One naming case on the wire: stored payloads move to the contract's camelCase names, so
workflows stored before replay.

- a model call's usage: `prompt_tokens`, `completion_tokens`, `cached_tokens`, `latency_ms`
  become `promptTokens`, `completionTokens`, `cachedTokens`, `latencyMs`;
- a document reference (a message's, an approval's, a document event's): `source_url`
  becomes `sourceUrl`;
- a thought's plan steps: `sub_steps` becomes `subSteps` (a list, empty when there were none).

Only those places are renamed: an action's own parameters keep the names it gave them.
Going back renames them the other way.
"""

from django.db import migrations

USAGE = {
    "prompt_tokens": "promptTokens",
    "completion_tokens": "completionTokens",
    "cached_tokens": "cachedTokens",
    "latency_ms": "latencyMs",
}
SOURCE_URL = {"source_url": "sourceUrl"}
SUB_STEPS = ("sub_steps", "subSteps")


def renamed(mapping, names):
    """`mapping` with its keys renamed by `names` (others kept, in place)."""
    return {names.get(key, key): value for key, value in mapping.items()}


def plan_steps(steps, old, new):
    """Plan steps with their sub-steps' key renamed, however deep."""
    out = []
    for step in steps or []:
        step = dict(step)
        subs = step.pop(old, None)
        step[new] = plan_steps(subs, old, new) if subs else ([] if new == "subSteps" else None)
        out.append(step)
    return out


def rewritten(kind, payload, *, back=False):
    """A stored payload in the new names (the old ones when going `back`); None when it
    needs no change."""
    usage = {v: k for k, v in USAGE.items()} if back else USAGE
    source = {v: k for k, v in SOURCE_URL.items()} if back else SOURCE_URL
    old, new = reversed(SUB_STEPS) if back else SUB_STEPS
    match kind:
        case "usage":
            return renamed(payload, usage)
        case "message" | "approval" if payload.get("documents"):
            refs = [renamed(ref, source) for ref in payload["documents"]]
            return {**payload, "documents": refs}
        case "document" if isinstance(payload.get("document"), dict):
            return {**payload, "document": renamed(payload["document"], source)}
        case "thought" if payload.get("planning"):
            return {**payload, "planning": plan_steps(payload["planning"], old, new)}
    return None


def rename(apps, back=False):
    WorkflowEvent = apps.get_model("workflows", "WorkflowEvent")
    rows = WorkflowEvent.objects.filter(
        type__in=("usage", "message", "approval", "document", "thought")
    ).order_by("pk")
    last = 0
    while batch := list(rows.filter(pk__gt=last)[:1000]):
        changed = []
        for row in batch:
            payload = rewritten(row.type, row.payload or {}, back=back)
            if payload is not None and payload != row.payload:
                row.payload = payload
                changed.append(row)
        WorkflowEvent.objects.bulk_update(changed, ["payload"])
        last = batch[-1].pk


def forwards(apps, schema_editor):
    rename(apps)


def backwards(apps, schema_editor):
    rename(apps, back=True)


class Migration(migrations.Migration):
    dependencies = [("workflows", "0010_api_tokens")]

    operations = [migrations.RunPython(forwards, backwards)]
