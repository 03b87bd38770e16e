"""Answers as a model writes them under the schema each side sends, for the benches.

The demo policy answers with the keys it needs; strict mode makes a model write every key
its schema requires (strict json_schema requires them all), in the schema's order, as
compact JSON (OpenAI's structured outputs and tool calls come back without spaces). A key the
policy left out is written with the value the product understood when it was missing (its
answer model's default), else the least the schema allows (null, "", [], false, 0, the first
enum value): the run is the same, only the bill is honest. Both sides get this: PowerOn's
structured answers under their response format, LangGraph's tool calls under their tool's
parameters schema (required keys only: its tools are not strict).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from bench.rendering import TOOL_CALL_FRAME, compact, count, resolve


def least(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """The shortest value a schema accepts for a key that must be written."""
    schema = resolve(schema, root)
    variants = schema.get("anyOf") or schema.get("oneOf") or []
    if "const" in schema:
        return schema["const"]
    if any(resolve(v, root).get("type") == "null" for v in variants):
        return None
    if variants:
        return least(variants[0], root)
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return shaped({}, {}, schema, root)
    return {"string": "", "array": [], "boolean": False, "integer": 0, "number": 0}.get(kind)


def _variant(value: Any, variants: list[dict[str, Any]], root: dict[str, Any]) -> dict[str, Any]:
    """The anyOf variant a value was written under."""
    want = {
        type(None): "null", dict: "object", list: "array", str: "string", bool: "boolean",
        int: "integer", float: "number",
    }.get(type(value))  # fmt: skip
    for variant in variants:
        resolved = resolve(variant, root)
        kind = resolved.get("type") or ("object" if "properties" in resolved else None)
        if kind == want or (want == "integer" and kind == "number"):
            return resolved
    return resolve(variants[0], root)


def shaped(answer: Any, understood: Any, schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """`answer` with every required key of `schema` present, keys in the schema's order;
    `understood` gives the values of the keys the answer left out."""
    schema = resolve(schema, root)
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        return shaped(answer, understood, _variant(answer, variants, root), root)
    if isinstance(answer, list) and schema.get("items"):
        known = understood if isinstance(understood, list) else []
        return [
            shaped(item, known[i] if i < len(known) else item, schema["items"], root)
            for i, item in enumerate(answer)
        ]
    properties = schema.get("properties")
    if not isinstance(answer, dict) or not properties:
        return answer
    understood = understood if isinstance(understood, dict) else {}
    required = set(schema.get("required") or [])
    out = {}
    for key, spec in properties.items():
        if key in answer:
            out[key] = shaped(answer[key], understood.get(key), spec, root)
        elif key in required:
            value = understood[key] if key in understood else least(spec, root)
            out[key] = shaped(value, value, spec, root)
    out.update({k: v for k, v in answer.items() if k not in properties})  # extra keys stay
    return out


def structured_answer(
    answer: dict[str, Any], response_format: dict[str, Any], model: type[BaseModel] | None
) -> str:
    """A structured answer as strict mode writes it under the request's response format."""
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    understood: Any = answer
    if model is not None:
        try:
            understood = model.model_validate(answer).model_dump(mode="json")
        except ValidationError:
            understood = answer  # the product rejects it anyway; count it as written
    return compact(shaped(answer, understood, schema, schema))


def tool_arguments(name: str, arguments: dict[str, Any], tools: list[dict[str, Any]]) -> str:
    """A tool call's arguments as a model writes them under that tool's parameters schema."""
    for tool in tools:
        if tool["function"]["name"] == name:
            schema = tool["function"].get("parameters") or {}
            return compact(shaped(arguments, arguments, schema, schema))
    return compact(arguments)


def tool_call_tokens(name: str, arguments: str) -> int:
    """Output tokens of a tool call: its name, its arguments and the call's framing."""
    return count(name) + count(arguments) + TOOL_CALL_FRAME
