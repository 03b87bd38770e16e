"""The catalog the loop chooses from: only usable tools, and why the others are not."""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError

from workflows.engine.records.protocols import ActionContext, ActionResult, Tool, catalog_line
from workflows.tools.documents.actions import DocumentExtract, DocumentGenerateReport
from workflows.tools.documents.process import AiProcess
from workflows.tools.web.actions import WebCrawl, WebScrape, WebSearch
from workflows.tools.web.settings import ToolSettings

logger = logging.getLogger(__name__)

CATALOG: tuple[type[Tool], ...] = (
    WebSearch,
    WebScrape,
    WebCrawl,
    AiProcess,
    DocumentExtract,
    DocumentGenerateReport,
)
SEARCH_TOOLS = frozenset({"web.search", "web.scrape"})
SETTING_VARIABLES = {
    "search_provider": "POWERON_SEARCH_PROVIDER",
    "tavily_api_key": "POWERON_TAVILY_API_KEY",
    "tavily_base_url": "POWERON_TAVILY_URL",
    "searxng_url": "POWERON_SEARXNG_URL",
    "allow_hosts": "POWERON_FETCH_ALLOW_HOSTS",
    "fetch_max_bytes": "POWERON_FETCH_MAX_BYTES",
    "fetch_timeout": "POWERON_FETCH_TIMEOUT",
    "scrape_max_pages": "POWERON_SCRAPE_MAX_PAGES",
    "crawl_max_pages": "POWERON_CRAWL_MAX_PAGES",
    "crawl_max_depth": "POWERON_CRAWL_MAX_DEPTH",
    "web_enrichment": "POWERON_WEB_ENRICHMENT",
    "document_max_bytes": "POWERON_MAX_UPLOAD_BYTES",
    "document_parse_timeout": "POWERON_DOCUMENT_PARSE_TIMEOUT",
    "document_parse_memory_mb": "POWERON_DOCUMENT_PARSE_MEMORY_MB",
    "document_max_xml_elements": "POWERON_DOCUMENT_MAX_XML_ELEMENTS",
}
"""The environment variable behind each key of the tools' settings (the host's
`tool_settings()` reads them), so that people are told what to set, not an internal key."""
_SECRET_KEY = re.compile(r"(key|secret|token|password)$", re.IGNORECASE)
_MAX_ERROR_CHARS = 500


class ToolRegistry:
    """The usable tools for one owner and settings; satisfies contracts.ToolExecutor."""

    def __init__(
        self,
        settings: Mapping[str, Any] | None = None,
        *,
        connection_kinds: Iterable[str] = (),
        extra: Sequence[Tool] = (),
        extra_unavailable: Mapping[str, str] | None = None,
    ) -> None:
        """`extra`: tools from other sources (MCP servers) after the built-in ones, and
        `extra_unavailable` what those sources could not offer, with the reason."""
        self.settings = dict(settings or {})
        self.connection_kinds = frozenset(connection_kinds)
        self._tools: dict[str, Tool] = {}
        self._unavailable: dict[str, str] = {}
        for tool_class in CATALOG:
            tool: Tool = tool_class()
            reason = self._reason_unavailable(tool)
            if reason is None:
                self._tools[tool.name] = tool
            else:
                self._unavailable[tool.name] = reason
        for tool in extra:
            self._tools.setdefault(tool.name, tool)
        self._unavailable.update(extra_unavailable or {})

    def tools(self) -> Sequence[Tool]:
        """The usable tools, in catalog order."""
        return list(self._tools.values())

    def unavailable(self) -> dict[str, str]:
        """Tools left out of the catalog, each with the reason, for the UI and admin."""
        return dict(self._unavailable)

    def catalog(self) -> list[str]:
        """The tiny catalog lines the model sees: method.action(param,names)."""
        return [catalog_line(tool) for tool in self._tools.values()]

    async def execute(self, name: str, params: BaseModel, ctx: ActionContext) -> ActionResult:
        """Run one action; unexpected errors become a failed result, cancellation passes."""
        tool = self._tools.get(name)
        if tool is None:
            reason = self._unavailable.get(name, "it is not in the catalog")
            return ActionResult(success=False, error=f"{name} is not available: {reason}")
        # The registry's settings are the defaults; the host may override them per action.
        ctx = replace(ctx, settings={**self.settings, **ctx.settings})
        secrets = self._secrets(ctx)
        try:
            checked = _as_parameters(tool, params)
            result = await tool.run(checked, ctx)
        except ValidationError as error:
            result = ActionResult(success=False, error=f"{name}: invalid parameters: {error}")
        except Exception as error:  # CancelledError is a BaseException and passes through.
            message = _redact(f"{type(error).__name__}: {error}", secrets)[:_MAX_ERROR_CHARS]
            frames = "".join(traceback.format_tb(error.__traceback__))
            logger.error("action %s failed: %s\n%s", name, message, frames)
            result = ActionResult(success=False, error=f"{name} failed: {message}")
        return _redacted_result(result, secrets)

    def _reason_unavailable(self, tool: Tool) -> str | None:
        if tool.name not in SEARCH_TOOLS:
            return None
        return search_unavailable(self.settings, self.connection_kinds)

    def _secrets(self, ctx: ActionContext) -> list[str]:
        values = [ctx.connection_secret or ""]
        for key, value in ctx.settings.items():
            if _SECRET_KEY.search(key):
                values.append(_secret_value(value))
        return [value for value in values if len(value) >= 6]


def search_unavailable(settings: Mapping[str, Any], connection_kinds: Iterable[str]) -> str | None:
    """Why web search cannot run for this owner, or None when a provider is usable."""
    if "tavily" in set(connection_kinds):
        return None
    try:
        parsed = ToolSettings.load(settings)
    except ValidationError as error:
        problems = "; ".join(_setting_problem(part) for part in error.errors())
        return f"The web tool settings are invalid: {problems}. Set a valid value and restart."
    if reason := parsed.provider_unavailable():
        return reason
    if parsed.search_provider == "tavily" and not _secret_value(parsed.tavily_api_key):
        return (
            "Tavily is selected but no API key is set (POWERON_TAVILY_API_KEY), and the user "
            "has no Tavily connection."
        )
    return None


def variables_named(reason: str) -> list[str]:
    """The environment variables a reason names, in the order it names them."""
    named = [name for name in SETTING_VARIABLES.values() if name in reason]
    return sorted(named, key=reason.index)


def _setting_problem(error: Any) -> str:
    """One invalid setting, named by its environment variable, with what is wrong."""
    key = str(error["loc"][0]) if error["loc"] else ""
    name = SETTING_VARIABLES.get(key, key or "a setting")
    return f"{name} ({error['msg'][:1].lower()}{error['msg'][1:]})"


def _secret_value(value: Any) -> str:
    if value is None:
        return ""
    getter = getattr(value, "get_secret_value", None)
    return str(getter() if callable(getter) else value)


def _as_parameters(tool: Tool, params: Any) -> BaseModel:
    """The tool's own parameter model: validated again when another model or a dict came."""
    if isinstance(params, tool.Parameters):
        return params
    if isinstance(params, BaseModel):
        params = params.model_dump()
    return tool.Parameters.model_validate(params or {})


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "[redacted]")
    return text


def _redacted_result(result: ActionResult, secrets: Sequence[str]) -> ActionResult:
    """The result with secrets removed from its error and notes (never from documents)."""
    if not secrets:
        return result
    update: dict[str, Any] = {"notes": [_redact(note, secrets) for note in result.notes]}
    if result.error:
        update["error"] = _redact(result.error, secrets)
    return result.model_copy(update=update)
