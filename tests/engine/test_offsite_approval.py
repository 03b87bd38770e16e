"""Safer defaults against exfiltration (POWERON_OFFSITE_APPROVAL, on by default): an action
that would send data to a host the user's request does not name waits for the user's
approval, whatever POWERON_APPROVAL_METHODS says (a prompt injection in a document made
web.crawl send document contents to another host without approval)."""

from __future__ import annotations

from tests.engine.conftest import collect, make_state, of, params, select, stop, taskplan
from workflows.engine.loop.guards import hosts_named, sends_offsite
from workflows.engine.records.state import Policy
from workflows.engine.testing import ScriptedLLM

GUARDED = Policy(offsite_approval=True, external=["files.*"])
RELAXED = Policy(offsite_approval=False, external=["files.*"])


def test_the_hosts_a_request_names():
    """URLs and bare host names count; words with a dot at the end of a sentence do not."""
    named = hosts_named("Read https://docs.example.org/a and compare with wiki.example.com. Done.")
    assert named == {"docs.example.org", "wiki.example.com"}


def test_a_url_on_a_host_the_request_does_not_name_waits():
    """Its own host (or a subdomain of it) goes; another host waits."""
    request = "Summarise example.org's pricing page"
    mine = {"url": "https://www.example.org/pricing"}
    theirs = {"url": "https://collect.evil.test/?q=revenue+12%25"}
    assert not sends_offsite(GUARDED, "web.fetch", mine, [], request)
    assert sends_offsite(GUARDED, "web.fetch", theirs, [], request)
    assert sends_offsite(GUARDED, "web.fetch", {"urls": [mine["url"], theirs["url"]]}, [], request)
    assert not sends_offsite(RELAXED, "web.fetch", theirs, [], request)


def test_a_crawl_of_addresses_in_documents_waits_unless_they_are_fetched_pages():
    """The addresses an uploaded or written document holds may be planted; the pages the
    host fetched itself stand for their own addresses."""
    assert sends_offsite(GUARDED, "web.crawl", {}, ["uploaded"], "Crawl the links")
    assert sends_offsite(GUARDED, "web.crawl", {}, ["fetched", "produced"], "Crawl")
    assert not sends_offsite(GUARDED, "web.crawl", {}, ["fetched"], "Crawl")
    assert not sends_offsite(RELAXED, "web.crawl", {}, ["uploaded"], "Crawl")


def test_an_external_tools_call_with_documents_waits():
    """An MCP server's tool given documents waits; without documents it does not."""
    assert sends_offsite(GUARDED, "files.upload", {"name": "a"}, ["uploaded"], "Store it")
    assert not sends_offsite(GUARDED, "files.list", {}, [], "List my files")
    assert not sends_offsite(RELAXED, "files.upload", {}, ["uploaded"], "Store it")


async def test_a_crawl_of_an_uploaded_document_asks_for_approval_by_default(store):
    """With no approval methods set, web.crawl of the user's uploaded notes waits for the
    user's approval (it ran without asking)."""
    llm = ScriptedLLM(
        [
            taskplan("Crawl the notes' links"),
            select("web.crawl", requiredInputDocuments=["docList:round1_uploads"]),
            params(),
            stop(),
            "Done.",
        ]
    )
    state = make_state(policy=Policy(offsite_approval=True))
    events = await collect(state, llm, store=store)
    asked, answered = of(events, "approval")
    assert asked.method == "web.crawl" and asked.status == "waiting"
    assert [d.name for d in asked.documents] == ["notes.txt"]
