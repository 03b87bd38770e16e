"""What the model client costs per call: one shared client per event loop, schemas built once."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from workflows.engine.model.clients import shared_client
from workflows.engine.model.formats import response_format
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.records.schemas import (
    ActionSelection,
    RefinementDecision,
    TaskPlan,
    TaskReview,
)

SETTINGS = {"api_key": "sk-test", "timeout": 5.0, "max_retries": 0}


def annotations(schema: Any) -> list[str]:
    """Every title or description keyword in a schema (property names do not count)."""
    if isinstance(schema, list):
        return [found for item in schema for found in annotations(item)]
    if not isinstance(schema, dict):
        return []
    found = [key for key in ("title", "description") if isinstance(schema.get(key), str)]
    for key, value in schema.items():
        named = key in ("properties", "$defs")
        for node in value.values() if named else [value]:
            found += annotations(node)
    return found


def test_two_callers_in_one_loop_share_one_client_closed_when_the_loop_ends() -> None:
    """Clients for the same settings in one loop are one; the loop's end closes it."""

    async def two_callers():
        first = shared_client(base_url="http://127.0.0.1:9/v1", **SETTINGS)
        second = shared_client(base_url="http://127.0.0.1:9/v1", **SETTINGS)
        other = shared_client(base_url="http://127.0.0.1:8/v1", **SETTINGS)
        return first, second, other

    first, second, other = asyncio.run(two_callers())
    assert first is second
    assert other is not first
    assert first.is_closed() and other.is_closed()


def test_every_event_loop_has_its_own_client() -> None:
    """An httpx client's connections belong to one loop: another loop gets another client."""

    async def client():
        return shared_client(base_url="http://127.0.0.1:9/v1", **SETTINGS)

    assert asyncio.run(client()) is not asyncio.run(client())


async def test_a_model_on_the_shared_client_leaves_it_open(fake_openai) -> None:
    """Closing a run's model does not close the client the next run uses."""
    fake_openai.add('{"status": "success"}', '{"status": "success"}')
    options = {"base_url": fake_openai.url, "api_key": "sk-test", "model": "fake-model"}
    first = OpenAICompatibleLLM(**options, shared=True)
    await first.complete([{"role": "user", "content": "u"}], output=TaskReview, kind="review")
    await first.aclose()
    second = OpenAICompatibleLLM(**options, shared=True)
    await second.complete([{"role": "user", "content": "u"}], output=TaskReview, kind="review")
    assert second.client is first.client
    assert not second.client.is_closed()
    fake_openai.assert_complete()


def test_the_response_format_is_built_once_per_model() -> None:
    """The schema of an output model is generated once, not on every call."""
    assert response_format(TaskPlan, "json_schema") is response_format(TaskPlan, "json_schema")
    assert response_format(TaskPlan, "json_object") == {"type": "json_object"}
    assert response_format(TaskPlan, "text") is None


def test_schemas_sent_are_compact_and_stay_strict() -> None:
    """No titles or descriptions (the prompt explains the fields); strict where it was, with
    every property required and no defaults."""
    for output in (TaskPlan, ActionSelection, RefinementDecision, TaskReview):
        sent = response_format(output, "json_schema")["json_schema"]
        assert sent["strict"] is True, output
        assert annotations(sent["schema"]) == [], output
        assert '"default"' not in json.dumps(sent["schema"])
        assert sent["schema"]["required"] == list(sent["schema"]["properties"])
    field = response_format(ActionSelection, "json_schema")["json_schema"]["schema"]["$defs"]
    parameter_field = field["ParameterField"]["properties"]
    assert {"description", "required"} <= set(parameter_field)  # properties keep their names


async def test_the_recorded_request_carries_the_compact_schema(fake_openai) -> None:
    """What the server receives is the cached, compact schema."""
    fake_openai.add('{"status": "success"}')
    async with OpenAICompatibleLLM(
        base_url=fake_openai.url, api_key="sk-test", model="fake-model", max_retries=0
    ) as llm:
        await llm.complete([{"role": "user", "content": "u"}], output=TaskReview, kind="review")
    sent = fake_openai.requests[0]["response_format"]
    assert sent == response_format(TaskReview, "json_schema")
    assert annotations(sent) == []


def test_text_bounds_are_checked_on_the_answer_item_bounds_sent() -> None:
    """maxLength stays out of the schema sent (max_tokens bounds the answer, servers refuse it
    in strict mode); maxItems is sent, so a small model cannot loop over a list; the answer is
    still held to both."""
    import json as json_module

    import pytest
    from pydantic import ValidationError

    from workflows.engine.records.schemas import ActionSelection

    sent = json_module.dumps(response_format(ActionSelection, "json_schema"))
    assert "maxLength" not in sent and '"maxItems": 20' in sent
    assert response_format(ActionSelection, "json_schema")["json_schema"]["strict"] is True
    with pytest.raises(ValidationError, match="at most 1000 characters"):
        ActionSelection(action="web.search", actionObjective="x" * 1_001)
