"""What a structured answer is asked for and read back as: the response formats (JSON schema,
compact and strict where it can be, built once per output model) and the JSON found in a
model's answer."""

from __future__ import annotations

import copy
import functools
import json
import re
import weakref
from dataclasses import dataclass
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


ANSWER_KEY = "answer"
_FENCE_END = re.compile(r"^\s*```[^\n]*(?:\n|$)")


def split_answer(text: str) -> Any:
    """A reply written as a JSON object followed by the answer to the user in plain text:
    the object, with the text after it as its "answer" (kept from inside the object when
    nothing follows it). Raises ValueError when there is no JSON object."""
    cleaned = _THINK.sub("", text)
    decoder = json.JSONDecoder()
    for index, char in enumerate(cleaned):
        if char != "{":
            continue
        try:
            value, end = decoder.raw_decode(cleaned, index)
        except json.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        rest = _FENCE_END.sub("", cleaned[end:], count=1).strip()
        if rest:
            value[ANSWER_KEY] = rest
        return value
    return extract_json(text)  # raises: no JSON object


def join_answer(value: dict[str, Any]) -> str:
    """A reply as split_answer reads it: the compact JSON object without its answer, then the
    answer on the next line (what a model following the instructions writes)."""
    answer = value.get(ANSWER_KEY)
    head = {key: item for key, item in value.items() if key != ANSWER_KEY}
    compact = json.dumps(head, separators=(",", ":"), ensure_ascii=False)
    return f"{compact}\n{answer}" if answer else compact


def holds_json(text: str) -> bool:
    """Whether a model's answer holds a complete JSON object (or array)."""
    try:
        extract_json(text)
    except ValueError:
        return False
    return True


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
_CAPS = ("maxLength",)
"""Upper bounds on text: checked on the answer (with a corrective retry), not sent, as servers
turn them into large grammars or refuse them in strict mode, and `max_tokens` bounds the answer
anyway. Item counts (`maxItems`) are sent: they keep a small model from looping over a list."""


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


@dataclass(frozen=True)
class SchemaTemplate:
    """A model's schema is another's with a placeholder filled in: the string `placeholder`
    (a const in `model`'s schema) becomes `values`, and the list holding it takes up to
    `max_items` of them. Filling it in takes a few dozen microseconds, where generating the
    schema takes a millisecond or more, at every step for a schema that names the documents
    that exist."""

    model: type[BaseModel]
    placeholder: str
    values: tuple[str, ...]
    max_items: int

    def fill(self, node: Any) -> Any:
        """A copy of the schema `node` with the placeholder filled in."""
        if isinstance(node, list):
            return [self.fill(item) for item in node]
        if not isinstance(node, dict):
            return node
        if node.get("const") == self.placeholder:  # one value is a const, several an enum
            rest = {key: value for key, value in node.items() if key != "const"}
            if len(self.values) == 1:
                return {"const": self.values[0], **rest}
            return {"enum": [*self.values], **rest}
        filled = {key: self.fill(value) for key, value in node.items()}
        items = node.get("items")
        if (
            isinstance(items, dict)
            and items.get("const") == self.placeholder
            and "maxItems" in node
        ):
            filled["maxItems"] = self.max_items
        return filled


SCHEMA_TEMPLATES: weakref.WeakKeyDictionary[type[BaseModel], SchemaTemplate] = (
    weakref.WeakKeyDictionary()
)
"""The models whose schema is filled in from another's (registered where they are built)."""


Asked = Literal["object", "answer_after"]
ASKED: weakref.WeakKeyDictionary[type[BaseModel], Asked] = weakref.WeakKeyDictionary()
"""The answer models asked for without a schema (a prompt head shared by every kind of call,
for a hosted provider's cache): "object", as a JSON object (json_object); "answer_after", as a
JSON object followed by the answer to the user in plain text (no response format)."""


@functools.lru_cache(maxsize=512)
def response_format(output: type[BaseModel], fmt: ResponseFormat) -> dict[str, Any] | None:
    """The response_format asking for `output` in `fmt`: computed once per model and format
    (a schema takes a millisecond or more to generate; the models built for calls from the live
    state are cached too, so a run asks for the same few; a model with a template has its
    template's schema filled in). A model asked for without a schema (ASKED) gets a JSON
    object, or plain text when its answer follows the JSON. Shared: never modify it."""
    asked = ASKED.get(output)
    if fmt == "text" or asked == "answer_after":
        return None
    if fmt == "json_object" or asked == "object":
        return {"type": "json_object"}
    if (template := SCHEMA_TEMPLATES.get(output)) is not None:
        shape = response_format(template.model, fmt)
        assert shape is not None
        return {**shape, "json_schema": template.fill(shape["json_schema"])}
    schema = compact_schema(output.model_json_schema())
    strict = strict_schema(schema)
    if (branching := BRANCHES.get(output)) is not None:
        schema, strict = branching.apply(strict if strict is not None else schema), None
    return {
        "type": "json_schema",
        "json_schema": {
            "name": output.__name__,
            "schema": strict if strict is not None else schema,
            "strict": strict is not None,
        },
    }


@dataclass(frozen=True)
class Branching:
    """A schema whose first key decides the rest: one alternative per value of `key`, with
    the properties that value settles fixed (`settled`: value → property → its schema). A
    server that makes a grammar of the schema (llama.cpp) then lets a model that wrote
    "direct" write nothing more than the answer needs, instead of tasks that are dropped."""

    key: str
    settled: dict[str, dict[str, Any]]

    def apply(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema as alternatives (its $defs kept at the top)."""
        body = {k: v for k, v in schema.items() if k != "$defs"}
        options = []
        for value in body["properties"][self.key].get("enum", []):
            option = copy.deepcopy(body)
            option["properties"][self.key] = {"type": "string", "enum": [value]}
            option["properties"].update(copy.deepcopy(self.settled.get(value, {})))
            options.append(option)
        if len(options) < 2:
            return schema
        return {**({"$defs": schema["$defs"]} if "$defs" in schema else {}), "anyOf": options}


BRANCHES: weakref.WeakKeyDictionary[type[BaseModel], Branching] = weakref.WeakKeyDictionary()
"""The answer models whose schema is sent as alternatives (narrow layouts only: a hosted
provider's strict mode wants an object at the root)."""


# --- Valid values, for corrective messages ----------------------------------------------------


@functools.lru_cache(maxsize=256)
def valid_values(output: type[BaseModel]) -> str:
    """The fixed choices of an output model's fields, in words ("" when it has none), e.g.
    `action: one of "web.search", "ai.process"; requiredConnection: null` (computed once per
    model, from its schema)."""
    template = SCHEMA_TEMPLATES.get(output)
    schema = (
        template.fill(template.model.model_json_schema())
        if template
        else output.model_json_schema()
    )
    defs: dict[str, Any] = schema.get("$defs", {})
    lines: list[str] = []

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref", "")
        return dict(defs.get(ref.rsplit("/", 1)[-1], {})) if ref else node

    def choices(node: dict[str, Any]) -> list[Any] | None:
        node = resolve(node)
        if "enum" in node:
            return list(node["enum"])
        if "const" in node:
            return [node["const"]]
        return None

    def visit(node: dict[str, Any], path: str, depth: int) -> None:
        node = resolve(node)
        options = [resolve(o) for o in node.get("anyOf", [])]
        nullable = any(o.get("type") == "null" for o in options)
        values = [o for o in options if o.get("type") != "null"]
        if len(values) == 1:
            node = values[0]
        if (found := choices(node)) is not None:
            words = ", ".join(json.dumps(value) for value in found)
            lines.append(f"{path}: one of {words}" + (" or null" if nullable else ""))
        elif node.get("type") == "null" or (nullable and not values):
            lines.append(f"{path}: null")
        elif node.get("type") == "array":
            if node.get("maxItems") == 0:
                lines.append(f"{path}: [] (nothing to choose from)")
            elif (found := choices(node.get("items", {}))) is not None:
                words = ", ".join(json.dumps(value) for value in found)
                lines.append(f"{path}: a list of {words}")
            elif depth < 3:
                visit(node.get("items", {}), f"{path}[]", depth + 1)
        elif depth < 3:
            for name, prop in node.get("properties", {}).items():
                visit(prop, f"{path}.{name}" if path else name, depth + 1)

    visit(schema, "", 0)
    return "; ".join(lines)
