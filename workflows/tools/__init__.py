"""The action catalog: web.search/scrape/crawl, ai.process, document.extract/generateReport."""

from workflows.tools.documents.actions import DocumentExtract, DocumentGenerateReport
from workflows.tools.documents.process import AiProcess
from workflows.tools.web.actions import WebCrawl, WebScrape, WebSearch

from .registry import CATALOG, ToolRegistry, search_unavailable

__all__ = [
    "CATALOG",
    "AiProcess",
    "DocumentExtract",
    "DocumentGenerateReport",
    "ToolRegistry",
    "WebCrawl",
    "WebScrape",
    "WebSearch",
    "search_unavailable",
]
