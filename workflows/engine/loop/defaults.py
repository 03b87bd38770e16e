"""Stage 2 defaults, applied in code rather than asked of the model (seed 001).

A default is applied only when the action's parameter model has that field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from workflows.engine.records.protocols import json_schema

_ANALYSIS = re.compile(
    r"\b(analy[sz]\w*|compar\w*|research\w*|evaluat\w*|assess\w*|in-depth|comprehensive|"
    r"investigat\w*|deep|thorough\w*|review\w*)\b",
    re.IGNORECASE,
)
_FRESH = re.compile(
    r"\b(latest|recent\w*|today|yesterday|this (week|month|year)|current\w*|news|now|"
    r"up-to-date|newest|breaking|aktuell\w*|neueste\w*|heute)\b",
    re.IGNORECASE,
)
_DAY = re.compile(r"\b(today|yesterday|breaking|heute|last 24 hours)\b", re.IGNORECASE)
_WEEK = re.compile(r"\b(this week|past week|last week|last 7 days)\b", re.IGNORECASE)
_STRUCTURED = re.compile(
    r"\b(json|csv|xlsx?|excel|spreadsheet|xml|yaml|structured (data|output)|machine-readable)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DefaultsContext:
    """What the defaults are derived from."""

    language: str
    task_type: str
    text: str
    """The objective, success criteria and user prompt, joined."""


def wants_freshness(text: str) -> bool:
    """Whether the objective or criteria imply recent information."""
    return bool(_FRESH.search(text))


def wants_structured(text: str) -> bool:
    """Whether machine-readable output was explicitly asked for."""
    return bool(_STRUCTURED.search(text))


def search_depth(task_type: str, text: str) -> str:
    """advanced for analysis, basic for lookups."""
    if task_type in {"analysis", "research"}:
        return "advanced"
    if task_type == "lookup":
        return "basic"
    return "advanced" if _ANALYSIS.search(text) else "basic"


def _property(model: type[BaseModel], name: str) -> dict[str, Any]:
    properties: dict[str, Any] = json_schema(model).get("properties", {})
    return dict(properties.get(name, {}))


def _enum_values(schema: dict[str, Any]) -> list[Any]:
    """Allowed values of a property, looking through arrays, anyOf and $ref-free enums."""
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return _enum_values(schema["items"])
    values: list[Any] = []
    for option in schema.get("anyOf", []):
        values.extend(_enum_values(option))
    return values


def _is_array(schema: dict[str, Any]) -> bool:
    if schema.get("type") == "array":
        return True
    return any(option.get("type") == "array" for option in schema.get("anyOf", []))


def _fit(model: type[BaseModel], name: str, candidates: list[str]) -> Any:
    """The first candidate the field accepts, as a list when the field is an array."""
    schema = _property(model, name)
    allowed = _enum_values(schema)
    value: Any = next((c for c in candidates if c in allowed), None) if allowed else None
    if value is None:
        if allowed:
            return None
        value = candidates[0]
    return [value] if _is_array(schema) else value


def _time_range(text: str) -> str:
    if _DAY.search(text):
        return "day"
    if _WEEK.search(text):
        return "week"
    return "month"


_TITLED = re.compile(
    r"\b(?:report|document|file|summary|note|notes|brief|briefing|memo|page)\s+"
    r"(?:titled|named|called|entitled)\s+[\"'“‘]([^\"'“”‘’\n]{2,80})[\"'”’]",
    re.IGNORECASE,
)


def requested_titles(prompt: str) -> list[str]:
    """The titles the request gives the documents it asks for ("a report titled 'Aurora
    summary'")."""
    return [match.group(1).strip() for match in _TITLED.finditer(prompt)]


def apply_defaults(
    model: type[BaseModel], parameters: dict[str, Any], ctx: DefaultsContext
) -> tuple[dict[str, Any], list[str]]:
    """Return the parameters with code-level defaults, and the names that were changed."""
    fields = model.model_fields
    params = dict(parameters)
    applied: list[str] = []

    def put(name: str, candidates: list[str], *, override: bool = False) -> None:
        if name not in fields or (params.get(name) not in (None, "", []) and not override):
            return
        value = _fit(model, name, candidates)
        if value is not None and params.get(name) != value:
            params[name] = value
            applied.append(name)

    put("language", [ctx.language])
    put("searchDepth", [search_depth(ctx.task_type, ctx.text)])
    if titles := requested_titles(ctx.text):  # the request's own title for its report
        put("title", titles[:1])
    if "timeRange" in fields:
        if wants_freshness(ctx.text):
            put("timeRange", [_time_range(ctx.text)])
        elif params.pop("timeRange", None) is not None:
            applied.append("timeRange")
    if not wants_structured(ctx.text):
        put("format", ["markdown", "md", "text/markdown"])
        put("expectedDocumentFormats", ["md", "markdown", "text/markdown"], override=True)
    return params, applied
