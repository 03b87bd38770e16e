"""An MCP server's tools as actions of the catalog, and their results as documents.

Each listed tool becomes an action named `<server>.<tool>` whose Parameters model is built from
the tool's input schema (checked against the whole schema before a call); a result's text,
structured content, resources and images become documents, capped and without the server's
credentials (`results`: bounded like uploads).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from workflows.engine.records.protocols import ActionContext, ActionResult, ToolBase
from workflows.tools.mcp.results import ResultLimits, redact_values, result_of
from workflows.tools.mcp.servers import McpServer, redact

DESCRIPTION_CHARS = 160
"""A tool's description as the model sees it (the first sentence, at most this long)."""
PARAMETER_NOTE_CHARS = 120
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_]+")
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


class Caller(Protocol):
    """What runs a tool's call: the run's connections to its servers (`mcp.McpHub`)."""

    async def call(
        self, server: McpServer, tool: str, arguments: dict[str, Any]
    ) -> ActionResult: ...


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a server listed it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def listed_spec(server: McpServer, name: str, description: str, schema: Any) -> ToolSpec | None:
    """A tool as a server listed it, without the server's credentials in its description or
    schema (descriptions, enums, defaults: a server may echo its Authorization header); None
    for a tool whose very name holds one (it is left out: its name would show it)."""
    if redact(server, name) != name:
        return None
    schema = redact_values(server, schema if isinstance(schema, dict) else {})
    return ToolSpec(name, redact(server, description or ""), schema)


def catalog_name(tool: str) -> str:
    """A tool's name as the catalog's action: letters, digits and underscores."""
    return _TOOL_NAME.sub("_", tool).strip("_")[:60] or "tool"


def short_description(text: str) -> str:
    """The first sentence, on one line, within DESCRIPTION_CHARS."""
    line = " ".join((text or "").split())
    first = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    return first[:DESCRIPTION_CHARS].rstrip()


class McpArguments(BaseModel):
    """The arguments of one MCP tool: its fields from the tool's input schema, checked against
    the whole schema (types, enums, ranges) before the call."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    input_schema: ClassVar[dict[str, Any]] = {}
    prompt_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls.prompt_schema

    @model_validator(mode="after")
    def _against_schema(self) -> McpArguments:
        import jsonschema

        validator = jsonschema.Draft202012Validator(self.input_schema)
        problems = sorted(validator.iter_errors(self.arguments()), key=lambda e: list(e.path))
        if problems:
            raise ValueError(
                "; ".join(
                    f"{'.'.join(map(str, p.path)) or 'arguments'}: {p.message}"
                    for p in problems[:5]
                )
            )
        return self

    def arguments(self) -> dict[str, Any]:
        """The arguments to send: the fields set, under the names the server gave them."""
        return self.model_dump(by_alias=True, exclude_unset=True)


def arguments_model(server: str, spec: ToolSpec) -> type[McpArguments]:
    """The Parameters model of one tool, from its input schema."""
    schema = spec.input_schema if isinstance(spec.input_schema, dict) else {}
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    for position, (name, prop) in enumerate(properties.items()):
        usable = _FIELD.match(name) and not name.startswith("model_")
        key = name if usable else f"field_{position}"
        default = ... if name in required else None
        fields[key] = (Any, Field(default, alias=name) if key != name else default)
        shown[name] = _prompt_property(prop if isinstance(prop, dict) else {})
    model = create_model(
        f"{server}_{catalog_name(spec.name)}_arguments", __base__=McpArguments, **fields
    )
    model.input_schema = schema
    model.prompt_schema = {
        "type": "object",
        "properties": shown,
        "required": sorted(required & set(properties)),
    }
    return model


def _prompt_property(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as Stage 2 sees it: its type and a short note (server text, cut short)."""
    kept = {k: v for k, v in prop.items() if k in ("type", "enum", "items", "minimum", "maximum")}
    note = " ".join(str(prop.get("description") or "").split())[:PARAMETER_NOTE_CHARS]
    if note:
        kept["description"] = note.replace("<<<", "< < <")
    return kept


class McpTool(ToolBase):
    """One tool of an MCP server, as an action of the catalog."""

    name: ClassVar[str]
    description: ClassVar[str]
    Parameters: ClassVar[type[BaseModel]]
    uses_documents: ClassVar[bool] = False
    server: ClassVar[McpServer]
    remote_name: ClassVar[str]
    untrusted_summary: ClassVar[str]
    """The server's own description: fenced as untrusted text in the catalog."""

    def __init__(self, hub: Caller) -> None:
        self.hub = hub

    async def run(self, params: Any, ctx: ActionContext) -> ActionResult:
        arguments = params.arguments() if isinstance(params, McpArguments) else dict(params or {})
        return await self.hub.call(self.server, self.remote_name, arguments)


def tool_class(server: McpServer, spec: ToolSpec) -> type[McpTool]:
    """The catalog action of one listed tool."""
    summary = short_description(spec.description)
    return type(
        f"Mcp_{server.name}_{catalog_name(spec.name)}",
        (McpTool,),
        {
            "name": f"{server.name}.{catalog_name(spec.name)}",
            "description": summary or f"{spec.name} (MCP server {server.name})",
            "Parameters": arguments_model(server.name, spec),
            "server": server,
            "remote_name": spec.name,
            "untrusted_summary": summary,
        },
    )


def to_result(
    server: McpServer, tool: str, result: Any, limits: ResultLimits | None = None
) -> ActionResult:
    """A tool's result as documents and notes, named after the tool (`results.result_of`)."""
    return result_of(server, tool, catalog_name(tool), result, limits or ResultLimits())


__all__ = ["ResultLimits", "redact_values", "to_result"]


def approval_patterns(servers: Sequence[McpServer]) -> list[str]:
    """The actions of these servers that wait for the user's approval, as policy patterns."""
    patterns: list[str] = []
    for server in servers:
        if server.approval is True:
            patterns.append(f"{server.name}.*")
        elif isinstance(server.approval, tuple):
            patterns.extend(f"{server.name}.{catalog_name(tool)}" for tool in server.approval)
    return patterns
