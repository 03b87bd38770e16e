"""What a structured answer is asked for and read back as: the response formats (JSON schema,
compact and strict where it can be, built once per output model) and the JSON found in a
model's answer."""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel

ResponseFormat = Literal["json_schema", "json_object", "text"]
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


# --- JSON extraction -------------------------------------------------------------------------


def extract_json(text: str) -> Any:
    """The first JSON object (or array) in a model's answer.

    Tolerates reasoning tags, code fences, leading prose and trailing text.
    Raises ValueError when there is none.
    """
    cleaned = _THINK.sub("", text).strip()
    candidates = [block.strip() for block in _FENCE.findall(cleaned)] + [cleaned]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for index, char in enumerate(candidate):
            if char not in "{[":
                continue
            try:
                value, _ = decoder.raw_decode(candidate, index)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict | list):
                return value
    raise ValueError("the answer holds no JSON object")


_NOT_SCHEMAS = ("properties", "$defs", "required", "default", "enum", "const", "examples")
"""Keywords whose values are names or data (a property may be called "required")."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema in OpenAI's strict form, or None when it cannot be strict.

    Strict mode needs `additionalProperties: false` and every property required on every
    object; free-form objects (dict fields) make a schema non-strict.
    """
    result = copy.deepcopy(schema)

    def visit(node: Any) -> bool:
        if isinstance(node, list):
            return all(visit(item) for item in node)
        if not isinstance(node, dict):
            return True
        if "$ref" in node:
            for key in [k for k in node if k != "$ref"]:
                del node[key]
            return True
        node.pop("default", None)
        if node.get("type") == "object" or "properties" in node:
            if node.get("additionalProperties") is not False or "properties" not in node:
                return False
            node["required"] = list(node["properties"])
        named = [*node.get("properties", {}).values(), *node.get("$defs", {}).values()]
        keywords = [v for k, v in node.items() if k not in _NOT_SCHEMAS]
        return all(visit(value) for value in [*named, *keywords])

    return result if visit(result) else None


_ANNOTATIONS = ("title", "description")
"""Schema keywords that only annotate: pydantic derives them from names and docstrings."""
_CAPS = ("maxLength", "maxItems")
"""Upper bounds against runaway answers: checked on the answer (with a corrective retry), not
sent, as every request would pay for them and no sensible answer comes near them."""


def compact_schema(schema: Any) -> Any:
    """The schema without its annotations (titles, descriptions) and its upper bounds: the
    prompt explains every field, so they would only repeat it in every request, and the bounds
    are checked on the answer. Property names are kept, even one called "title"."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    compact = {}
    for key, value in schema.items():
        if key in _ANNOTATIONS and isinstance(value, str) or key in _CAPS:
            continue
        if key in ("properties", "$defs"):  # names, not keywords
            compact[key] = {name: compact_schema(node) for name, node in value.items()}
        elif key in _NOT_SCHEMAS:
            compact[key] = value
        else:
            compact[key] = compact_schema(value)
    return compact


@functools.cache
def response_format(output: type[BaseModel], fmt: ResponseFormat) -> dict[str, Any] | None:
    """The response_format asking for `output` in `fmt`: computed once per model and format
    (a schema takes a millisecond or more to generate). Shared: never modify it."""
    if fmt == "text":
        return None
    if fmt == "json_object":
        return {"type": "json_object"}
    schema = compact_schema(output.model_json_schema())
    strict = strict_schema(schema)
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output.__name__,
            "schema": strict if strict is not None else schema,
            "strict": strict is not None,
        },
    }
