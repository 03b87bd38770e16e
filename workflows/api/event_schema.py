"""The JSON Schema of every event a client receives, made from the contract's union (never
written by hand): one variant per event type, each the envelope as the socket's
`format=json`, `/events` and the event stream send it, `{workflow, seq, type, round, task,
action, payload, at}`, with `payload` that type's own fields. Served at
/api/v1/events.schema.json and linked from the OpenAPI document."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse

from workflows.events.contract import EVENT_TYPES, ROUTING_FIELDS, any_event

PATH = "/api/v1/events.schema.json"
MEDIA_TYPE = "application/schema+json"


def _variant(type: str, payload: str) -> dict[str, Any]:
    integer = {"type": "integer"}
    return {
        "type": "object",
        "title": type,
        "properties": {
            "workflow": integer,
            "seq": {
                "type": ["integer", "null"],
                "description": "Per workflow and increasing; null for what is never stored "
                "(live frames of an answer being written, notices).",
            },
            "type": {"const": type},
            "round": integer,
            "task": integer,
            "action": integer,
            "payload": {"$ref": f"#/$defs/{payload}"},
            "at": {
                "type": ["string", "null"],
                "format": "date-time",
                "description": "When it was stored (null when it never is).",
            },
        },
        "required": ["workflow", "seq", "type", "round", "task", "action", "payload", "at"],
        "additionalProperties": False,
    }


@cache
def event_schema() -> dict[str, Any]:
    """The schema (a JSON Schema 2020-12 document)."""
    union = any_event.json_schema(mode="serialization")
    definitions = copy.deepcopy(union["$defs"])
    variants = []
    by_type = {
        kind: ref.rsplit("/", 1)[-1] for kind, ref in union["discriminator"]["mapping"].items()
    }
    for kind in EVENT_TYPES:
        name = by_type[kind]
        model = definitions[name]
        # What is stored as the payload: the event's fields but the routing ones.
        model["properties"] = {
            field: value
            for field, value in model["properties"].items()
            if field not in ROUTING_FIELDS
        }
        model["required"] = [f for f in model.get("required", []) if f not in ROUTING_FIELDS]
        variants.append(_variant(kind, name))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": PATH,
        "title": "PowerOn event",
        "description": (
            "One event as a client receives it: every step of every round, the host's own "
            "(run status, title, feedback) and a socket's notices. `type` says which; "
            "`payload` holds that type's fields."
        ),
        "oneOf": variants,
        "$defs": definitions,
    }


def event_schema_view(request: HttpRequest) -> HttpResponse:
    """The schema, for anyone (it says how events look, nothing of anyone's)."""
    body = json.dumps(event_schema(), ensure_ascii=False, indent=1)
    response = HttpResponse(body, content_type=MEDIA_TYPE)
    response["Cache-Control"] = "public, max-age=3600"
    return response
