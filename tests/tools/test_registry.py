"""The tool registry: only usable tools in the catalog, reasons for the rest, safe execution."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from tests.tools._documents_helpers import context, make_pdf, pdf_text
from workflows.engine.records.protocols import ActionContext
from workflows.engine.records.references import result_label
from workflows.engine.testing import ScriptedLLM
from workflows.tools import ToolRegistry
from workflows.tools.documents.actions import DocumentExtractParameters
from workflows.tools.documents.process import AiProcessParameters
from workflows.tools.documents.report import DocumentGenerateReportParameters

ALL = [
    "web.search",
    "web.scrape",
    "web.crawl",
    "ai.process",
    "document.extract",
    "document.generateReport",
]
SEARXNG = {"search_provider": "searxng", "searxng_url": "http://127.0.0.1:8888"}


def names(registry: ToolRegistry) -> list[str]:
    return [tool.name for tool in registry.tools()]


def test_configured_provider_offers_every_tool_in_catalog_order():
    """With a search provider configured, all six tools are offered in the seed's order."""
    registry = ToolRegistry(SEARXNG)
    assert names(registry) == ALL
    assert registry.unavailable() == {}


def test_catalog_lines_match_the_seed():
    """The tiny catalog is derived from the parameter models, as the seed lists it; a tool that
    reads documents says so instead of showing documentList as a parameter."""
    assert ToolRegistry(SEARXNG).catalog() == [
        "web.search(query,maxResults,searchDepth,timeRange,topic,includeDomains,"
        "excludeDomains,language,includeAnswer,includeRawContent)",
        "web.scrape(query,maxResults,searchDepth,timeRange,topic,includeDomains,"
        "excludeDomains,language,includeAnswer,includeRawContent,extractDepth,format)",
        "web.crawl(extractDepth,format) [reads documents]",
        "ai.process(aiPrompt,processingMode,includeMetadata,"
        "customInstructions,expectedDocumentFormats) [reads documents]",
        "document.extract(aiPrompt) [reads documents]",
        "document.generateReport(title) [reads documents]",
    ]


def test_without_provider_search_tools_are_left_out_with_a_reason():
    """No provider: web.search and web.scrape are missing and the reason says what to set."""
    registry = ToolRegistry({})
    assert names(registry) == ALL[2:]
    reasons = registry.unavailable()
    assert set(reasons) == {"web.search", "web.scrape"}
    assert "No search provider is configured" in reasons["web.search"]
    assert "POWERON_SEARCH_PROVIDER" in reasons["web.scrape"]


def test_searxng_without_url_is_unavailable():
    """SearXNG selected but no URL: the reason names the setting to set."""
    reasons = ToolRegistry({"search_provider": "searxng"}).unavailable()
    assert "POWERON_SEARXNG_URL is not set" in reasons["web.search"]


def test_tavily_with_a_key_is_available():
    """Tavily with an API key in settings offers the search tools."""
    registry = ToolRegistry({"search_provider": "tavily", "tavily_api_key": "tvly-abcdef"})
    assert names(registry) == ALL


def test_tavily_without_key_or_connection_is_unavailable():
    """Tavily selected with neither a key nor the user's connection is explained."""
    reasons = ToolRegistry({"search_provider": "tavily"}).unavailable()
    assert "no API key is set (POWERON_TAVILY_API_KEY)" in reasons["web.search"]
    assert "Tavily connection" in reasons["web.search"]


@pytest.mark.parametrize("site", [{}, {"search_provider": "tavily"}])
def test_a_users_tavily_connection_makes_search_available(site):
    """The owner's own Tavily connection is enough, whatever the site settings say."""
    registry = ToolRegistry(site, connection_kinds={"tavily"})
    assert names(registry) == ALL
    assert registry.unavailable() == {}


def test_invalid_settings_are_a_reason_not_a_crash():
    """Settings the web tools reject leave them out, naming the environment variable to set
    and what is wrong with it, never an internal key."""
    registry = ToolRegistry({**SEARXNG, "fetch_timeout": -1, "search_provider": "bing"})
    reason = registry.unavailable()["web.search"]
    assert reason == (
        "The web tool settings are invalid: POWERON_FETCH_TIMEOUT (input should be greater "
        "than 0); POWERON_SEARCH_PROVIDER (input should be 'tavily' or 'searxng'). "
        "Set a valid value and restart."
    )
    assert "fetch_timeout" not in reason and "search_provider" not in reason
    assert "ai.process" in names(registry)


def test_every_tool_setting_is_named_by_a_real_environment_variable(settings):
    """Each key the host passes to the tools has its POWERON_* variable, a Django setting of
    the same name (so a message can say what to set)."""
    from workflows.execution.setup import tool_settings
    from workflows.tools.registry import SETTING_VARIABLES

    assert set(SETTING_VARIABLES) == set(tool_settings())
    assert all(hasattr(settings, name) for name in SETTING_VARIABLES.values())


async def test_execute_runs_the_tool():
    """execute() runs a usable tool with its parameters and returns its result."""
    llm = ScriptedLLM(["Done."])
    result = await ToolRegistry().execute(
        "ai.process", AiProcessParameters(aiPrompt="Say done"), context(llm=llm)
    )
    assert result.success
    assert result.documents[0].data == b"Done.\n"


async def test_execute_refuses_unavailable_and_unknown_tools():
    """An unavailable tool fails with its reason; an unknown one says it is not offered."""
    registry = ToolRegistry({})
    result = await registry.execute("web.search", AiProcessParameters(aiPrompt="x"), context())
    assert not result.success
    assert result.error.startswith("web.search is not available: No search provider")
    result = await registry.execute("shell.run", AiProcessParameters(aiPrompt="x"), context())
    assert result.error == "shell.run is not available: it is not in the catalog"


async def test_execute_revalidates_foreign_parameters():
    """Parameters of another model are validated against the tool's own model."""

    class Loose(BaseModel):
        aiPrompt: str
        processingMode: str = "basic"

    llm = ScriptedLLM(["ok"])
    registry = ToolRegistry()
    assert (await registry.execute("ai.process", Loose(aiPrompt="x"), context(llm=llm))).success
    result = await registry.execute(
        "ai.process", Loose(aiPrompt="x", processingMode="wild"), context()
    )
    assert not result.success
    assert result.error.startswith("ai.process: invalid parameters")


async def test_unexpected_errors_become_failed_results_without_secrets():
    """A tool crash is a failed result; the connection secret never appears in it."""
    llm = ScriptedLLM([RuntimeError("upstream said: bad key sk-user-secret-123")])
    ctx = context(("a.txt", "text/plain", b"x"), llm=llm)
    ctx.connection_secret = "sk-user-secret-123"
    result = await ToolRegistry().execute("ai.process", AiProcessParameters(aiPrompt="x"), ctx)
    assert not result.success
    assert result.error == "ai.process failed: RuntimeError: upstream said: bad key [redacted]"


async def test_secrets_in_settings_are_redacted_from_errors():
    """Values of *_key settings are scrubbed from error messages too."""
    settings = {"search_provider": "tavily", "tavily_api_key": "tvly-site-key-42"}
    llm = ScriptedLLM([RuntimeError("echo tvly-site-key-42")])
    ctx = context(llm=llm)
    result = await ToolRegistry(settings).execute(
        "ai.process", AiProcessParameters(aiPrompt="x"), ctx
    )
    assert result.error == "ai.process failed: RuntimeError: echo [redacted]"


async def test_cancellation_passes_through():
    """A stop (CancelledError) is never turned into a result."""

    def cancel(messages):
        raise asyncio.CancelledError

    ctx = context(llm=ScriptedLLM([cancel]))
    with pytest.raises(asyncio.CancelledError):
        await ToolRegistry().execute("ai.process", AiProcessParameters(aiPrompt="x"), ctx)


async def test_registry_settings_reach_the_tools():
    """The host's action context may carry no settings: the registry's are used."""
    llm = ScriptedLLM(["n1", "n2", "final"])
    text = ("word " * 300 + "\n\n") * 2
    ctx: ActionContext = context(("a.txt", "text/plain", text.encode()), llm=llm)
    registry = ToolRegistry({"ai_process_chunk_chars": 1_600})
    result = await registry.execute("ai.process", AiProcessParameters(aiPrompt="x"), ctx)
    assert result.success
    assert [call.kind for call in llm.calls] == [
        "ai.process.map",
        "ai.process.map",
        "ai.process.reduce",
    ]


async def test_extract_process_report_chain_over_an_uploaded_pdf():
    """An uploaded PDF goes through extract, ai.process and the report via stored documents."""
    llm = ScriptedLLM(["## Digest\n\nOtters: 12 sightings.", "Otters are thriving."])
    ctx = context(("survey.pdf", "application/pdf", make_pdf(["Otters seen 12 times."])), llm=llm)
    registry = ToolRegistry()
    steps = [
        ("document.extract", DocumentExtractParameters()),
        ("ai.process", AiProcessParameters(aiPrompt="Digest the survey")),
        ("document.generateReport", DocumentGenerateReportParameters(title="Otters")),
    ]
    for action, (name, parameters) in enumerate(steps, start=1):
        result = await registry.execute(name, parameters, ctx)
        assert result.success, result.error
        label = result_label(1, 1, action, result.label)
        ctx.documents = [
            await ctx.store.save(document, label=label, round=1, task=1, action=action)
            for document in result.documents
        ]
    assert [ref.name for ref in ctx.documents] == ["otters.md", "otters.html", "otters.pdf"]
    assert {ref.label for ref in ctx.documents} == {"round1_task1_action3_report"}
    assert "Otters are thriving." in pdf_text(await ctx.store.read(ctx.documents[2]))
    assert "1. result.md" in (await ctx.store.read(ctx.documents[0])).decode()
    assert "<<<UNTRUSTED DATA from survey.md:" in llm.calls[0].messages[-1]["content"]
