"""The engine's optional capabilities are declared on its protocols (records.protocols) and
read as attributes: a tool's purpose, catalog note and untrusted summary with their defaults
on ToolBase; an executor's unavailable(); a model's warm() and aclose()."""

from __future__ import annotations

from tests.support.fake_tools import FakeToolExecutor, fake_tools
from workflows.engine.demo.policy import DemoLLM
from workflows.engine.model.llm import OpenAICompatibleLLM
from workflows.engine.model.staged import StagedLLM
from workflows.engine.prompting.prompts import render_catalog
from workflows.engine.prompting.ranking import CatalogSearch, is_external
from workflows.engine.records.protocols import Closable, ToolBase, Warmable
from workflows.tools.registry import CATALOG


def test_the_products_tools_inherit_the_defaults_and_are_their_own() -> None:
    """Every tool of the catalog (and the fakes, and catalog.search) is a ToolBase: no
    untrusted summary, so it is listed as the product's own."""
    for tool in (*CATALOG, *(type(t) for t in fake_tools()), CatalogSearch):
        assert issubclass(tool, ToolBase), tool
        assert tool.untrusted_summary is None, tool
    assert not any(is_external(t) for t in fake_tools())
    assert all(tool.purpose for tool in CATALOG)  # a small model's catalog shows them


def test_a_catalog_note_and_purposes_are_read_as_attributes() -> None:
    search = CatalogSearch(hidden=7)
    text = render_catalog([*fake_tools()[:1], search], purposes=True)
    assert "7 more external tools are not listed" in text
    assert FakeToolExecutor().unavailable() == {}


def test_warm_and_close_are_capabilities_a_model_may_have() -> None:
    """The OpenAI-compatible client and a staged pair have them; the demo model has neither;
    a staged pair says its main model's response format without forwarding anything else."""
    real = OpenAICompatibleLLM(base_url="http://127.0.0.1:9/v1", api_key="x", model="m")
    staged = StagedLLM(real, DemoLLM())
    assert isinstance(real, Warmable) and isinstance(real, Closable)
    assert isinstance(staged, Warmable) and isinstance(staged, Closable)
    assert not isinstance(DemoLLM(), Warmable) and not isinstance(DemoLLM(), Closable)
    assert staged.response_format == real.response_format
    assert StagedLLM(DemoLLM(), real).response_format == "json_schema"
    assert not hasattr(staged, "slots")  # the main model's settings are not forwarded
