"""The action catalog: web.search/scrape/crawl, ai.process, document.extract/generateReport."""

from .documents import DocumentExtract, DocumentGenerateReport
from .process import AiProcess
from .registry import CATALOG, ToolRegistry, search_unavailable
from .web import WebCrawl, WebScrape, WebSearch

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
