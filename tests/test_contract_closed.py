"""The contract is closed all the way down: every model an event can hold, and every record
the engine and the host exchange, refuses a field it does not declare."""

import inspect
import typing
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workflows.engine.records import events, parts, protocols, schemas, state
from workflows.engine.records.protocols import ActionResult, DocumentRef, Usage, WebFinding
from workflows.engine.records.schemas import Observation, Preview
from workflows.events import contract
from workflows.events.contract import AnyEvent, Envelope, event_from


def reachable(annotation: object, found: dict[type[BaseModel], None] | None = None) -> list:
    """Every pydantic model an annotation can hold, however deeply nested (unions, lists,
    dicts, Annotated, optional parts)."""
    found = {} if found is None else found
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in found:
            found[annotation] = None
            for field in annotation.model_fields.values():
                reachable(field.annotation, found)
        return list(found)
    for argument in typing.get_args(annotation):
        reachable(argument, found)
    return list(found)


def open_models(models: list[type[BaseModel]]) -> list[str]:
    """The models among `models` that would accept an undeclared field."""
    return sorted(m.__qualname__ for m in models if m.model_config.get("extra") != "forbid")


def test_the_walk_reaches_nested_parts():
    """The walk goes through the union into nested parts (an observation's previews and web
    findings, a message's documents), so the check below sees them."""
    models = reachable(Envelope)
    for part in (Observation, Preview, WebFinding, DocumentRef, parts.CallSpend):
        assert part in models
    assert len([m for m in models if issubclass(m, events.BaseEvent)]) == len(contract.EVENT_TYPES)


def test_the_check_finds_an_open_nested_part():
    """A nested part without extra="forbid", however deep, is reported by name."""

    class Loose(BaseModel):
        note: str = ""

    class Holder(BaseModel):
        model_config = ConfigDict(extra="forbid")
        parts: list[dict[str, Loose | None]] = Field(default_factory=list)

    class OddEvent(events.BaseEvent):
        type: Literal["odd"] = "odd"
        holder: Holder

    union = Annotated[OddEvent | events.RoundEvent, Field(discriminator="type")]
    assert open_models(reachable(union)) == [Loose.__qualname__]


def test_every_model_reachable_from_the_event_union_forbids_unknown_fields():
    """An event, or any part nested in one, that accepts an undeclared field fails here."""
    assert open_models(reachable(AnyEvent)) == []
    assert open_models(reachable(Envelope)) == []


def test_every_record_the_engine_exchanges_forbids_unknown_fields():
    """The records the loop and the world exchange (usage, action results, produced
    documents, the round's state) are closed too."""
    models = [
        member
        for module in (events, protocols, schemas, state, contract)
        for _, member in inspect.getmembers(module, inspect.isclass)
        if issubclass(member, BaseModel) and member.__module__ == module.__name__
    ]
    for model in models:
        reachable(model, found := {})
        assert open_models(list(found)) == [], model
    for part in (ActionResult, protocols.ProducedDocument, Usage, state.RoundState):
        assert part in models


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (Preview, {"name": "a.md", "mime": "text/markdown", "size": 3}),
        (WebFinding, {"url": "https://example.org/", "score": 1}),
        (DocumentRef, {"id": "1", "name": "a", "mime": "text/plain", "label": "x", "path": "/"}),
        (Usage, {"kind": "select", "total_tokens": 3}),
        (ActionResult, {"success": True, "payload": "raw"}),
    ],
)
def test_a_nested_part_refuses_an_undeclared_field(model, data):
    """Each part, on its own, refuses a field it does not declare."""
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate(data)


def test_a_stored_observation_with_an_undeclared_field_fails_to_read_back():
    """A stored event whose nested observation has a field the contract lacks fails loudly
    on the way in, not silently dropped."""
    observation = {"success": True, "resultLabel": "r", "raw": "<html>"}
    with pytest.raises(ValidationError, match="observation.raw"):
        event_from("observe", {"observation": observation}, round=1, task=1, action=1)


def test_one_naming_case_on_the_wire():
    """Every field of every event and of every part nested in one is named in the seeds'
    camelCase (no snake_case key reaches a payload)."""
    snake = sorted(
        f"{model.__qualname__}.{name}"
        for model in reachable(AnyEvent)
        for name in model.model_fields
        if "_" in name
    )
    assert snake == []
