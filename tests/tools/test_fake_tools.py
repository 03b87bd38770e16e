"""The fake tools the engine's tests and the benchmarks run are the catalog's tools as the model
and the engine see them: the same names in the same order, the same use of documents, and the
same parameters (fields, types, bounds, choices, defaults, descriptions, unknown fields
refused, the same values accepted, normalised or refused). A fake that drifts fails here."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from tests.support.fake_tools import FakeToolExecutor, fake_tools, real_tool
from workflows.tools import CATALOG
from workflows.tools.web.search import SearchParameters

PROBES: tuple[Any, ...] = (None, "", "x", "advanced", "JSON, csv", ["json"], [], -1, 10**6, True)
"""Values tried in every field: empty, wrong types, out of bounds, choices, formats."""


def drift(fake: type[BaseModel], real: type[BaseModel]) -> list[str]:
    """How a fake's parameter model differs from its tool's JSON schema, one line each."""
    ours, theirs = fake.model_json_schema(), real.model_json_schema()
    found = []
    fields = ours.get("properties", {}), theirs.get("properties", {})
    for name in sorted(set(fields[0]) | set(fields[1])):
        if name not in fields[0]:
            found.append(f"{name}: missing from the fake")
        elif name not in fields[1]:
            found.append(f"{name}: the tool has no such field")
        elif fields[0][name] != fields[1][name]:
            found.append(f"{name}: {fields[0][name]} where the tool has {fields[1][name]}")
    for key in ("required", "additionalProperties", "$defs"):
        if ours.get(key) != theirs.get(key):
            found.append(f"{key}: {ours.get(key)} where the tool has {theirs.get(key)}")
    return found


def outcome(model: type[BaseModel], values: dict[str, Any]) -> dict[str, Any] | str:
    """The validated parameters, or the fields a validation failure names."""
    try:
        return model.model_validate(values).model_dump()
    except ValidationError as error:
        return "refused: " + ", ".join(sorted({str(e["loc"][:1]) for e in error.errors()}))


def disagreements(fake: type[BaseModel], real: type[BaseModel]) -> list[str]:
    """The probed parameters the fake validates otherwise than the tool does."""
    required = real.model_json_schema().get("required", [])
    base = dict.fromkeys(required, "x")
    samples: list[dict[str, Any]] = [base, {}, {**base, "unknownField": 1}]
    samples += [{**base, name: value} for name in real.model_fields for value in PROBES]
    return [
        f"{sample}: {outcome(fake, sample)} where the tool gives {outcome(real, sample)}"
        for sample in samples
        if outcome(fake, sample) != outcome(real, sample)
    ]


def test_the_fakes_are_the_catalogs_tools_in_order() -> None:
    """Six fakes, named and ordered as the catalog, reading documents where their tool does."""
    fakes, tools = fake_tools(), [tool_class() for tool_class in CATALOG]
    assert [tool.name for tool in fakes] == [tool.name for tool in tools]
    assert [tool.uses_documents for tool in fakes] == [tool.uses_documents for tool in tools]
    assert [tool.name for tool in FakeToolExecutor().tools()] == [tool.name for tool in tools]


@pytest.mark.parametrize("fake", fake_tools(), ids=lambda tool: tool.name)
def test_a_fakes_parameters_are_its_tools(fake: Any) -> None:
    """The fake's parameter model has its tool's schema and validates every probe alike."""
    real = real_tool(fake.name).Parameters
    assert drift(fake.Parameters, real) == []
    assert disagreements(fake.Parameters, real) == []


class HandWrittenSearch(BaseModel):
    """web.search's parameters as the fakes once declared them by hand."""

    query: str
    maxResults: int = 5
    searchDepth: Literal["basic", "advanced"] | None = None
    timeRange: Literal["day", "week", "month", "year"] | None = None
    topic: str | None = None
    includeDomains: list[str] | None = None
    excludeDomains: list[str] | None = None
    language: str | None = None
    includeAnswer: bool = False
    includeRawContent: bool = False


def test_a_hand_written_copy_is_caught() -> None:
    """The checks see the drift of the old hand-written copy: defaults, bounds, choices and
    unknown fields accepted."""
    found = "\n".join(drift(HandWrittenSearch, SearchParameters))
    for name in ("query", "maxResults", "searchDepth", "topic", "includeDomains"):
        assert f"{name}: " in found
    assert "additionalProperties" in found
    differ = "\n".join(disagreements(HandWrittenSearch, SearchParameters))
    assert "'unknownField': 1" in differ and "'maxResults': 1000000" in differ
    assert "'topic': 'x'" in differ
