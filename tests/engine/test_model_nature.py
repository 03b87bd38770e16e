"""The demo model is recognised in one place (engine.model.nature): a live model by its label,
a stored event by the model it names, whatever release stored it."""

from __future__ import annotations

import ast
from pathlib import Path

from workflows.engine.demo.policy import DemoLLM
from workflows.engine.model.nature import demo_label, is_demo
from workflows.engine.records.events import UsageEvent, event_adapter

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"


def test_the_live_demo_model_is_recognised_and_a_real_one_is_not() -> None:
    assert is_demo(DemoLLM().label)
    assert demo_label() == DemoLLM().label
    assert not is_demo("gpt-4.1-mini")
    assert not is_demo("")


def test_a_stored_usage_event_of_the_demo_model_is_recognised() -> None:
    """A usage event as stored (the model's name in its payload) reads back as the demo's."""
    stored = {"type": "usage", "round": 1, "kind": "select", "model": "demo model"}
    event = event_adapter.validate_python(stored)
    assert isinstance(event, UsageEvent) and is_demo(event.model)


def test_no_host_module_compares_with_the_demo_label() -> None:
    """Outside the demo and the one place that recognises it, no code names the demo's label
    or writes its literal."""
    found = []
    for path in WORKFLOWS.rglob("*.py"):
        where = path.relative_to(WORKFLOWS).as_posix()
        if where.startswith(("engine/demo/", "migrations/")) or where == "engine/model/nature.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.alias) and "DEMO_LABEL" in (
                node.id if isinstance(node, ast.Name) else node.name
            ):
                found.append(where)
            if isinstance(node, ast.Constant) and node.value == "demo model":
                found.append(where)
    assert found == []
