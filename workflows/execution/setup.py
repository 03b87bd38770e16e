"""Setting up a round from settings and the database: the model, the tools, the round's state."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils import timezone

from workflows import pricing, selectors
from workflows.engine.model import warming
from workflows.engine.model.money import Prices
from workflows.engine.records.protocols import LLM, ToolExecutor, Warmable
from workflows.engine.records.state import Budgets, ConnectionInfo, HistoryEntry, Policy, RoundState
from workflows.models import ChatMessage, ChatWorkflow, default_max_steps
from workflows.tools.documents import isolation
from workflows.tools.mcp import sources as mcp
from workflows.tools.mcp import tools as mcp_tools
from workflows.tools.mcp.servers import McpServer, load_servers, servers_for, user_server

from .llm_setup import build_llm, call_schemas, close_llm, model_prices, small_model
from .llm_setup import model_advice as model_advice  # re-exported: callers know these here
from .llm_setup import model_configured as model_configured
from .llm_setup import model_label as model_label

logger = logging.getLogger(__name__)

HISTORY_SNIPPET_CHARS = 600
ANSWER_TIMEOUT_SECONDS = 15 * 60


@dataclass
class RoundParts:
    """What a round runs with besides its recorded state: never checkpointed."""

    llm: LLM
    tools: ToolExecutor
    connections: dict[str, str]
    """Connection label -> secret, for the owner only; never logged, sent or recorded."""
    answer_timeout: float
    mcp: mcp.McpHub | None = None
    """The round's MCP connections, closed when the run ends."""


def preload() -> None:
    """Import what every round needs, the model client among it, compile the templates
    its events are rendered with, and read the model's price, so the first round does not
    (the rare parsers of a few tools stay imported where they are used)."""
    from workflows.engine.model import llm  # noqa: F401
    from workflows.events import rendering
    from workflows.tools import registry  # noqa: F401

    rendering.preload()
    model_prices()  # the price table takes a tenth of a second to load


async def warm_up() -> None:
    """At process start, in the loop that will run rounds: preload, create the model's shared
    client, rehearse a call through it and build the answer models a round opens with, so the
    first run pays for none of it. A rehearsal that fails is logged; the start goes on."""
    preload()
    isolation.start_zygote()  # the process that parses documents, so the first read is quick
    site_mcp_servers()  # a mistake in POWERON_MCP_SERVERS is logged now, not at a first run
    if not model_configured():
        return
    import anyio

    from workflows.engine.model.llm import OpenAICompatibleLLM
    from workflows.engine.model.staged import StagedLLM

    await anyio.sleep(0)  # loads the async backend the client's first request would load
    llm = build_llm()
    try:
        if isinstance(llm, Warmable):
            await llm.warm()  # a call rehearsed through the SDK, without a request
        warming.prepare_answers(
            build_tools(connection_kinds=set()),
            schemas=call_schemas(),
            max_steps=default_max_steps(),
            policy=policy([]),
            fmt=(
                llm.response_format
                if isinstance(llm, OpenAICompatibleLLM | StagedLLM)
                else "json_schema"
            ),
        )
    except Exception:
        logger.warning(
            "the start-up rehearsal failed; the first round may be slower", exc_info=True
        )


async def close_parts(parts: RoundParts) -> None:
    """Release what the run holds: its model's own resources and its MCP connections."""
    try:
        await close_llm(parts.llm)
    finally:
        if parts.mcp is not None:
            await parts.mcp.aclose()


def tool_settings() -> dict[str, Any]:
    """The tools' settings, from Django settings (see the README's tool section)."""
    return {
        "search_provider": settings.POWERON_SEARCH_PROVIDER or None,
        "tavily_api_key": settings.POWERON_TAVILY_API_KEY or None,
        "tavily_base_url": settings.POWERON_TAVILY_URL,
        "searxng_url": settings.POWERON_SEARXNG_URL or None,
        "allow_hosts": list(settings.POWERON_FETCH_ALLOW_HOSTS),
        "fetch_max_bytes": settings.POWERON_FETCH_MAX_BYTES,
        "fetch_timeout": float(settings.POWERON_FETCH_TIMEOUT),
        "scrape_max_pages": settings.POWERON_SCRAPE_MAX_PAGES,
        "crawl_max_pages": settings.POWERON_CRAWL_MAX_PAGES,
        "crawl_max_depth": settings.POWERON_CRAWL_MAX_DEPTH,
        "web_enrichment": settings.POWERON_WEB_ENRICHMENT,
        # What an upload or a fetch accepted is read (and never less than 20 MiB).
        "document_max_bytes": max(
            settings.POWERON_MAX_UPLOAD_BYTES, settings.POWERON_FETCH_MAX_BYTES, 20 * 1024 * 1024
        ),
        "document_parse_timeout": float(settings.POWERON_DOCUMENT_PARSE_TIMEOUT),
        "document_parse_memory_mb": settings.POWERON_DOCUMENT_PARSE_MEMORY_MB,
        "document_max_xml_elements": settings.POWERON_DOCUMENT_MAX_XML_ELEMENTS,
    }


def build_tools(
    *,
    connection_kinds: set[str],
    extra: Sequence[Any] = (),
    extra_unavailable: dict[str, str] | None = None,
) -> ToolExecutor:
    """The tools usable for this owner (a provider they hold a connection for counts), with
    the tools of their MCP servers."""
    from workflows.tools.registry import ToolRegistry

    return ToolRegistry(
        tool_settings(),
        connection_kinds=connection_kinds,
        extra=extra,
        extra_unavailable=extra_unavailable,
    )


def history_entry(message: ChatMessage) -> HistoryEntry:
    return HistoryEntry(
        # Ignored for mypy below: a CharField whose choices are the history's roles.
        role=message.role,  # type: ignore[arg-type]
        round=message.round,
        task=message.task,
        action=message.action,
        method=message.action_full_name,
        content=message.content[:HISTORY_SNIPPET_CHARS],
        summary=message.summary,
        documents_label=message.documents_label,
        documents=[f"docItem:{d.pk}:{d.name}" for d in message.documents.all()],
        learnings=[str(item) for item in message.learnings or []],
        success=message.success,
    )


@database_sync_to_async
def prepare(workflow: ChatWorkflow, message: ChatMessage) -> dict[str, Any]:
    """The round's state as JSON (recorded): history of earlier rounds, connections by label,
    limits. No secret is in it."""
    hidden = selectors.rounds_hidden(message=message)
    earlier = workflow.messages.filter(round__lt=hidden.start).prefetch_related("documents")
    connections = selectors.usable_connections(user=workflow.owner)
    prices = model_prices()
    state = RoundState(
        # Ignored for mypy below: a CharField whose choices are the engine's modes.
        mode=workflow.mode,  # type: ignore[arg-type]
        round=message.round,
        prompt=message.content,
        language=settings.LANGUAGE_CODE.split("-")[0],
        max_steps=workflow.max_steps,
        history=[history_entry(m) for m in earlier],
        connections=[
            ConnectionInfo(label=c.label, kind=c.kind) for c in connections if c.kind != MCP_KIND
        ],
        budgets=Budgets(
            tokens=settings.POWERON_TOKEN_BUDGET or None,
            day_tokens=settings.POWERON_DAILY_TOKEN_BUDGET or None,
            day_tokens_used=tokens_in_the_last_day(workflow),
            seconds=float(settings.POWERON_TIME_BUDGET) or None,
            **cost_budget(workflow, prices),
        ),
        prices=prices,
        small_model=small_model(),
        small_prices=model_prices(small=True) if small_model() else None,
        small_schemas=call_schemas(small=True) if small_model() else None,
        schemas=call_schemas(),
        policy=policy(connections),
    )
    return state.model_dump(mode="json")


def policy(connections: list[Any]) -> Policy:
    """The actions that wait for the user's approval: the site's, the MCP tools that ask for
    it of the servers this owner may use, and (POWERON_OFFSITE_APPROVAL) those that would
    send data to a host the request does not name, the MCP servers' calls with documents."""
    servers = mcp_servers(connections)
    return Policy(
        approval=[*settings.POWERON_APPROVAL_METHODS, *mcp_tools.approval_patterns(servers)],
        offsite_approval=settings.POWERON_OFFSITE_APPROVAL,
        external=[f"{server.name}.*" for server in servers],
    )


def cost_budget(workflow: ChatWorkflow, prices: Prices | None) -> dict[str, float]:
    """The daily budget in money and what the workflow spent of it in the last 24 hours
    (nothing when there is no budget, or no price to count with)."""
    limit = float(settings.POWERON_DAILY_COST_BUDGET)
    if not limit:
        return {}
    if prices is None:
        logger.warning(
            "POWERON_DAILY_COST_BUDGET is set but the price of %r is unknown: set "
            "POWERON_PRICE_INPUT and POWERON_PRICE_OUTPUT for the budget to apply",
            settings.POWERON_LLM_MODEL,
        )
        return {}
    calls = selectors.usage_since(workflow=workflow, since=timezone.now() - timedelta(days=1))
    spent = [call.cost for call in calls]
    used = pricing.cost_sum(c for c in spent if c is None or c.currency == prices.currency)
    return {"day_cost": limit, "day_cost_used": used.total if used else 0.0}


def tokens_in_the_last_day(workflow: ChatWorkflow) -> int:
    """Prompt and completion tokens the workflow's model calls spent in the last 24 hours."""
    calls = selectors.usage_since(workflow=workflow, since=timezone.now() - timedelta(days=1))
    return sum(call.promptTokens + call.completionTokens for call in calls)


async def build(workflow: ChatWorkflow) -> RoundParts:
    """The model, the tools (the MCP servers' listed too) and the owner's connection secrets
    for a round (the model and the MCP connections are made in the round's own loop)."""
    connections = await database_sync_to_async(selectors.usable_connections)(user=workflow.owner)
    hub = mcp.McpHub(
        mcp_servers(connections),
        allow_hosts=settings.POWERON_FETCH_ALLOW_HOSTS,
        limits=mcp_tools.ResultLimits(
            document_bytes=settings.POWERON_MAX_UPLOAD_BYTES,
            result_bytes=settings.POWERON_MCP_MAX_RESULT_BYTES,
            documents=settings.POWERON_MCP_MAX_DOCUMENTS,
        ),
    )
    extra, failures = await hub.catalog() if hub.servers else ([], {})
    # The model is told that a server's tools are missing, in our words: a failure's text may
    # carry the server's own (the Tools panel shows it whole).
    unavailable = {
        name: f"the MCP server {name.split('.')[0]} cannot be used now" for name in failures
    }
    return RoundParts(
        llm=build_llm(),
        tools=build_tools(
            connection_kinds={c.kind for c in connections},
            extra=extra,
            extra_unavailable=unavailable,
        ),
        connections={c.label: c.secret for c in connections if c.kind != MCP_KIND},
        answer_timeout=ANSWER_TIMEOUT_SECONDS,
        mcp=hub,
    )


MCP_KIND = "mcp"
"""The kind of a user's connection to their own MCP server."""


def site_mcp_servers() -> list[McpServer]:
    """The operator's MCP servers (POWERON_MCP_SERVERS); configuration problems are logged
    and left out."""
    servers, problems = load_servers(settings.POWERON_MCP_SERVERS)
    for problem in problems:
        if problem not in _SAID:  # once per process, not at every round and page
            _SAID.add(problem)
            logger.warning("%s", problem)
    return servers


_SAID: set[str] = set()
"""The configuration problems this process has logged."""


def mcp_servers(connections: list[Any]) -> list[McpServer]:
    """The MCP servers one user's rounds may use: the site's and their own."""
    own = {}
    for connection in connections:
        if connection.kind == MCP_KIND and connection.url:
            server = user_server(
                label=connection.label,
                url=connection.url,
                secret=connection.secret,
                owner=connection.owner_id,
            )
            if server is not None:
                own[server.name] = server
    return servers_for(site_mcp_servers(), own)
