"""How a provider renders a chat-completions request into the tokens it bills, for the benches.

OpenAI does not bill tools as the JSON the API takes: a model of the gpt-4o class reads them
rendered as a TypeScript-like namespace (the layout OpenAI publishes with its open-weight
models in the harmony format, openai/harmony `src/encoding.rs`, and the one ChatGPT's tool
prompts show):

    # Tools

    ## functions

    namespace functions {

    // Get the current weather in a given location
    type get_current_weather = (_: {
    // The city and state, e.g. San Francisco, CA
    location: string,
    unit?: "celsius" | "fahrenheit", // default: celsius
    }) => any;

    } // namespace functions

That rendering is checked against the OpenAI cookbook's estimator (`cookbook_tool_tokens`,
"How to count tokens with tiktoken", `num_tokens_for_tools`, fitted by OpenAI to the API's
counts for gpt-4o and gpt-4o-mini): the cookbook's own example request renders to 102 tokens
where the API counted 101, and on the benches' catalogs the rendering without its
`// default:` comments (which the estimator leaves out) is within 15% of the estimator
(bench/yardstick.py prints the check). A structured answer's `response_format` is rendered
as harmony renders a response format (`# Response Formats`, `## name`, the schema as compact
JSON), ahead of the system message: OpenAI's prompt-caching guide says the schema "serves
as a prefix to the system message"; how the hosted models spell it is not published, so
compact JSON is the assumption. Messages are framed as the cookbook counts them (three tokens
a message plus its role, three to prime the answer).

Anthropic publishes no rendering: its tools are counted as compact JSON (name, description,
input_schema) after the tool-use system prompt its pricing page lists (346 tokens with
tool_choice auto for the Claude 4 models), and a structured answer's schema as compact JSON
after an injected prompt assumed to be as long as the forced-tool one (313 tokens). Its cache
breakpoint sits after the system message. Claude's tokenizer is not public: o200k stands in
for it on both sides, so ratios hold better than absolute counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import bpe_openai
import numpy as np

ENCODING = bpe_openai.get_encoding("o200k_base")
START, CHANNEL, MESSAGE, END, CALL = 200006, 200005, 200008, 200007, 200012
"""Harmony's framing tokens (o200k_harmony ids): only their count and identity matter here."""
ANTHROPIC_TOOL_PROMPT = 346
"""Tokens of the system prompt Anthropic adds when a request has tools (tool_choice auto)."""
ANTHROPIC_FORMAT_PROMPT = 313
"""Assumed tokens of the prompt a structured answer adds (as with a forced tool: 313)."""
TOOL_CALL_FRAME = 3
"""Output tokens of a tool call besides its name and arguments (recipient, format, end)."""


def count(text: str) -> int:
    """o200k tokens of a text."""
    return len(ENCODING.encode_ordinary(text))


def tokens(text: str) -> list[int]:
    return list(ENCODING.encode_ordinary(text))


def compact(value: Any) -> str:
    """JSON as a model writes it and as a compact schema is sent: no spaces, no \\u escapes."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- OpenAI: tools as a TypeScript-like namespace ------------------------------------------


def resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """A schema with its $ref followed (within `root`'s $defs)."""
    while "$ref" in schema:
        schema = root.get("$defs", {})[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _default(schema: dict[str, Any]) -> str:
    default = schema["default"]
    if isinstance(default, str) and "enum" not in schema:
        return f'"{default}"'
    return default if isinstance(default, str) else compact(default)


def typescript(schema: dict[str, Any], root: dict[str, Any], indent: str = "") -> str:
    """A JSON schema as harmony writes a parameter's type (unions of anyOf inline)."""
    schema = resolve(schema, root)
    variants = schema.get("anyOf") or schema.get("oneOf")
    if variants:
        return " | ".join(typescript(v, root, indent) for v in variants)
    if "const" in schema:
        return compact(schema["const"])
    if "enum" in schema:
        return " | ".join(compact(value) for value in schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join("number" if k == "integer" else k for k in kind)
    if kind == "object" and schema.get("properties"):
        return "{\n" + members(schema, root, indent + "    ") + f"{indent}}}"
    if kind == "array":
        items = schema.get("items")
        return f"{typescript(items, root, indent)}[]" if items else "Array<any>"
    return {"integer": "number", None: "any"}.get(kind, kind)  # type: ignore[arg-type]


def members(
    schema: dict[str, Any], root: dict[str, Any], indent: str = "", defaults: bool = True
) -> str:
    """An object's properties, one per line: `// description`, `name?: type, // default: x`."""
    required = set(schema.get("required") or [])
    lines = []
    for key, value in schema.get("properties", {}).items():
        value = resolve(value, root)
        if value.get("description"):
            lines.append(f"{indent}// {value['description']}\n")
        line = f"{indent}{key}{'' if key in required else '?'}: {typescript(value, root, indent)},"
        if defaults and "default" in value:
            line += f" // default: {_default(value)}"
        lines.append(line + "\n")
    return "".join(lines)


def functions_namespace(tools: list[dict[str, Any]], *, defaults: bool = True) -> str:
    """The tools of a request as gpt-4o-class models read them."""
    parts = ["## functions\n", "namespace functions {\n"]
    for tool in tools:
        function = tool["function"]
        parts.extend(f"// {line}" for line in (function.get("description") or "").splitlines())
        parameters = function.get("parameters") or {}
        if parameters.get("properties"):
            body = members(parameters, parameters, defaults=defaults)
            parts.append(f"type {function['name']} = (_: {{\n{body}}}) => any;\n")
        else:
            parts.append(f"type {function['name']} = () => any;\n")
    parts.append("} // namespace functions")
    return "# Tools\n\n" + "\n".join(parts)


def cookbook_tool_tokens(tools: list[dict[str, Any]]) -> int:
    """The OpenAI cookbook's estimate of the tokens a request's tools add for gpt-4o and
    gpt-4o-mini (num_tokens_for_tools, constants as published). It knows flat properties with
    a type and a description; here a property without a type takes its anyOf types and one
    without a description an empty one, so it can read the benches' catalogs."""
    func_init, prop_init, prop_key, enum_init, enum_item, func_end = 7, 3, 3, -3, 3, 12
    total = 0
    for tool in tools:
        function = tool["function"]
        description = function.get("description") or ""
        description = description[:-1] if description.endswith(".") else description
        total += func_init + count(f"{function['name']}:{description}")
        properties = (function.get("parameters") or {}).get("properties") or {}
        if properties:
            total += prop_init
            for key, spec in properties.items():
                total += prop_key
                kinds = spec.get("type") or "|".join(
                    str(v.get("type", "")) for v in spec.get("anyOf", [])
                )
                if "enum" in spec:
                    total += enum_init + sum(enum_item + count(str(v)) for v in spec["enum"])
                text = spec.get("description") or ""
                text = text[:-1] if text.endswith(".") else text
                total += count(f"{key}:{kinds}:{text}")
    return total + func_end if tools else 0


def response_format_text(response_format: dict[str, Any]) -> str:
    """A json_schema response format as harmony writes it into the instructions."""
    shape = response_format.get("json_schema") or {}
    return f"# Response Formats\n\n## {shape.get('name', '')}\n\n{compact(shape.get('schema', {}))}"


# --- Requests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Billed:
    """A request as a provider bills it: its tokens, and where its cache breakpoint ends (the
    shared head: schema or tools and the system message; Anthropic caches only up to it)."""

    tokens: np.ndarray
    breakpoint: int


def _tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {
        call["id"]: call["function"]["name"]
        for message in messages
        for call in message.get("tool_calls") or []
    }


def _call_arguments(call: dict[str, Any]) -> str:
    """A tool call's arguments as the model wrote them (compact JSON)."""
    try:
        return compact(json.loads(call["function"]["arguments"]))
    except ValueError:
        return str(call["function"]["arguments"])


def _messages(messages: list[dict[str, Any]], anthropic: bool) -> list[int]:
    names = _tool_names(messages)
    out: list[int] = []
    for message in messages:
        calls = message.get("tool_calls") or []
        for call in calls:
            name = call["function"]["name"]
            head = f"assistant tool_use {name}" if anthropic else f"assistant to=functions.{name}"
            out += [START, *tokens(head), CHANNEL, *tokens("commentary json"), MESSAGE]
            out += [*tokens(_call_arguments(call)), CALL]
        if calls and not message.get("content"):
            continue
        role = message["role"]
        if role == "tool":
            name = names.get(message.get("tool_call_id", ""), "")
            role = "user tool_result" if anthropic else f"functions.{name} to=assistant"
        out += [START, *tokens(role), MESSAGE, *tokens(_text(message.get("content"))), END]
    return [*out, START, *tokens("assistant"), MESSAGE]


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def openai_request(body: dict[str, Any]) -> Billed:
    """An OpenAI request: the response format ahead of the system message, the tools after
    it (as harmony's developer message has them), then the messages."""
    messages = list(body["messages"])
    system = messages.pop(0) if messages and messages[0]["role"] == "system" else None
    instructions = []
    if (body.get("response_format") or {}).get("type") == "json_schema":
        instructions.append(response_format_text(body["response_format"]))
    if system is not None:
        instructions.append(_text(system.get("content")))
    if body.get("tools"):
        instructions.append(functions_namespace(body["tools"]))
    head = [START, *tokens("system"), MESSAGE, *tokens("\n\n".join(instructions)), END]
    head = head if instructions else []
    return Billed(np.array(head + _messages(messages, False), dtype=np.int64), len(head))


def anthropic_request(body: dict[str, Any]) -> Billed:
    """An Anthropic request: tools (or the answer's schema) with their injected prompt, then
    the system message, where the breakpoint goes; then the messages."""
    messages = list(body["messages"])
    system = messages.pop(0) if messages and messages[0]["role"] == "system" else None
    head: list[int] = []
    if body.get("tools"):
        head += range(300_000, 300_000 + ANTHROPIC_TOOL_PROMPT)  # the same text every time
        listed = [
            {
                "name": tool["function"]["name"],
                "description": tool["function"].get("description", ""),
                "input_schema": tool["function"].get("parameters", {}),
            }
            for tool in body["tools"]
        ]
        head += tokens(compact(listed))
    shape = (body.get("response_format") or {}).get("json_schema")
    if shape:
        head += range(310_000, 310_000 + ANTHROPIC_FORMAT_PROMPT)
        head += tokens(compact(shape.get("schema", {})))
    if system is not None:
        head += tokens(_text(system.get("content")))
    breakpoint = len(head) if system is not None else 0  # the product marks its system block
    return Billed(np.array(head + _messages(messages, True), dtype=np.int64), breakpoint)


def billed(body: dict[str, Any], provider: str) -> Billed:
    """A request rendered for `provider` ("openai" or "anthropic")."""
    return anthropic_request(body) if provider == "anthropic" else openai_request(body)


def old_serialised(body: dict[str, Any]) -> str:
    """The earlier yardstick's request: tools or response format as compact JSON first, then
    'role: content' per message (kept to print the earlier figures beside the new)."""
    head = body.get("tools") or body.get("response_format")
    parts = [json.dumps(head, separators=(",", ":"), ensure_ascii=False)] if head else []
    for message in body["messages"]:
        parts.append(f"{message['role']}: {message.get('content') or ''}")
        for call in message.get("tool_calls") or []:
            parts.append(f"{call['function']['name']} {call['function']['arguments']}")
    return "\n".join(parts)
