"""Tool catalogs of 6 to 100 actions for the benchmarks, for PowerOn and as LangChain tools.

The first six are the product's built-in actions with their real names, descriptions and
parameter models (`workflows.tools`), run by the tests' small fake behaviours. The others
look like the tools an MCP server offers (calendar.createEvent, crm.findContact,
github.searchIssues, ...): pydantic parameter models with typed fields and descriptions,
made deterministically from the templates below, so a catalog of N tools is always the
same N tools and a smaller catalog is the start of a larger one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from itertools import zip_longest
from typing import Any, Literal

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ConfigDict, Field, create_model

from tests.support.fake_tools import FakeTool, fake_tools
from workflows.engine.records.protocols import ActionContext, ActionResult
from workflows.tools import CATALOG

Spec = tuple[str, Any, Any, str]
"""One field: name, type, default (... when required), description."""

DAY = Literal["today", "tomorrow", "this_week", "next_week"]
PRIORITY = Literal["lowest", "low", "medium", "high", "highest"]

# service names per family; "{s}" in a description is the service's display name
FAMILIES: dict[str, tuple[dict[str, str], list[tuple[str, str, list[Spec]]]]] = {
    "calendar": (
        {"calendar": "Google Calendar", "outlookCalendar": "Outlook Calendar"},
        [
            ("createEvent", "Create an event in {s} and invite attendees.", [
                ("title", str, ..., "The event title."),
                ("start", str, ..., "Start, ISO 8601 with time zone offset."),
                ("end", str, ..., "End, ISO 8601 with time zone offset."),
                ("attendees", list[str], [], "E-mail addresses of the people to invite."),
                ("location", str | None, None, "A room or an address."),
                ("description", str | None, None, "The event's agenda or notes."),
                ("conference", bool, False, "Attach a video conference link."),
            ]),
            ("listEvents", "List the events of a {s} calendar in a time range.", [
                ("calendarId", str, "primary", "The calendar; primary by default."),
                ("timeMin", str, ..., "Range start, ISO 8601."),
                ("timeMax", str, ..., "Range end, ISO 8601."),
                ("query", str | None, None, "Free text matched against titles and notes."),
                ("maxResults", int, 25, "At most this many events."),
            ]),
            ("updateEvent", "Change an existing {s} event; only the given fields change.", [
                ("eventId", str, ..., "The event to change."),
                ("title", str | None, None, "A new title."),
                ("start", str | None, None, "A new start, ISO 8601."),
                ("end", str | None, None, "A new end, ISO 8601."),
                ("notifyAttendees", bool, True, "Send the attendees an update."),
            ]),
            ("findFreeSlots", "Find times when all the given people are free in {s}.", [
                ("attendees", list[str], ..., "E-mail addresses to check."),
                ("durationMinutes", int, 30, "Length of the meeting."),
                ("within", DAY, "this_week", "Where to look."),
                ("workingHoursOnly", bool, True, "Only 9:00 to 17:00 in each one's zone."),
            ]),
            ("deleteEvent", "Cancel a {s} event.", [
                ("eventId", str, ..., "The event to cancel."),
                ("message", str | None, None, "A note sent with the cancellation."),
            ]),
        ],
    ),
    "crm": (
        {"crm": "Salesforce", "hubspot": "HubSpot"},
        [
            ("findContact", "Find contacts in {s} by name, e-mail or company.", [
                ("query", str, ..., "A name, an e-mail address or a company."),
                ("company", str | None, None, "Only contacts of this company."),
                ("ownerEmail", str | None, None, "Only contacts owned by this user."),
                ("limit", int, 10, "At most this many contacts."),
            ]),
            ("createContact", "Create a contact in {s}.", [
                ("firstName", str, ..., "Given name."),
                ("lastName", str, ..., "Family name."),
                ("email", str, ..., "E-mail address."),
                ("company", str | None, None, "The contact's company."),
                ("phone", str | None, None, "Phone number, E.164."),
                ("lifecycleStage", Literal["lead", "opportunity", "customer"], "lead", "Stage."),
            ]),
            ("listDeals", "List {s} deals by stage, owner and close date.", [
                ("stage", str | None, None, "A pipeline stage, e.g. negotiation."),
                ("ownerEmail", str | None, None, "Only deals of this owner."),
                ("closingBefore", str | None, None, "Only deals closing before, ISO 8601 date."),
                ("minAmount", float | None, None, "Only deals worth at least this much."),
                ("limit", int, 20, "At most this many deals."),
            ]),
            ("updateDeal", "Update a {s} deal's stage, amount or close date.", [
                ("dealId", str, ..., "The deal to update."),
                ("stage", str | None, None, "The new pipeline stage."),
                ("amount", float | None, None, "The new amount."),
                ("closeDate", str | None, None, "The new close date, ISO 8601."),
            ]),
            ("logActivity", "Log a call, meeting or note on a {s} record.", [
                ("recordId", str, ..., "The contact, company or deal."),
                ("kind", Literal["call", "meeting", "note", "email"], ..., "What happened."),
                ("summary", str, ..., "What was said or agreed."),
                ("occurredAt", str | None, None, "When, ISO 8601; now by default."),
            ]),
        ],
    ),
    "code": (
        {"github": "GitHub", "gitlab": "GitLab"},
        [
            ("searchIssues", "Search {s} issues and pull requests with a query.", [
                ("repository", str, ..., "owner/name."),
                ("query", str, ..., "Search terms; qualifiers such as label:bug work."),
                ("state", Literal["open", "closed", "all"], "open", "Issue state."),
                ("labels", list[str], [], "Only issues with all of these labels."),
                ("sort", Literal["created", "updated", "comments"], "updated", "Sort key."),
                ("perPage", int, 20, "Results per page, at most 100."),
            ]),
            ("createIssue", "Open a new {s} issue.", [
                ("repository", str, ..., "owner/name."),
                ("title", str, ..., "The issue title."),
                ("body", str, "", "The issue text, Markdown."),
                ("labels", list[str], [], "Labels to add."),
                ("assignees", list[str], [], "User names to assign."),
            ]),
            ("getPullRequest", "Read a {s} pull request with its files and review state.", [
                ("repository", str, ..., "owner/name."),
                ("number", int, ..., "The pull request number."),
                ("includeDiff", bool, False, "Include the unified diff."),
            ]),
            ("listCommits", "List the commits of a {s} branch.", [
                ("repository", str, ..., "owner/name."),
                ("branch", str, "main", "The branch."),
                ("since", str | None, None, "Only commits after, ISO 8601."),
                ("author", str | None, None, "Only commits by this author."),
                ("path", str | None, None, "Only commits touching this path."),
            ]),
            ("createComment", "Comment on a {s} issue or pull request.", [
                ("repository", str, ..., "owner/name."),
                ("number", int, ..., "The issue or pull request number."),
                ("body", str, ..., "The comment, Markdown."),
            ]),
            ("searchCode", "Search code across {s} repositories.", [
                ("query", str, ..., "Search terms."),
                ("language", str | None, None, "Only files in this language."),
                ("repository", str | None, None, "Only this repository, owner/name."),
                ("perPage", int, 20, "Results per page."),
            ]),
        ],
    ),
    "tracker": (
        {"jira": "Jira", "linear": "Linear", "asana": "Asana"},
        [
            ("createTicket", "Create a {s} ticket in a project.", [
                ("project", str, ..., "The project key."),
                ("summary", str, ..., "One-line summary."),
                ("description", str, "", "Details, Markdown."),
                ("priority", PRIORITY, "medium", "Priority."),
                ("assignee", str | None, None, "Who works on it."),
                ("dueDate", str | None, None, "Due date, ISO 8601."),
            ]),
            ("searchTickets", "Search {s} tickets with a query.", [
                ("query", str, ..., "Text or the tracker's query language."),
                ("project", str | None, None, "Only this project."),
                ("status", str | None, None, "Only tickets in this status."),
                ("assignee", str | None, None, "Only tickets of this person."),
                ("maxResults", int, 25, "At most this many tickets."),
            ]),
            ("transitionTicket", "Move a {s} ticket to another status.", [
                ("ticketId", str, ..., "The ticket key."),
                ("status", str, ..., "The target status, e.g. In Progress."),
                ("comment", str | None, None, "A comment added with the move."),
            ]),
            ("assignTicket", "Assign a {s} ticket to someone.", [
                ("ticketId", str, ..., "The ticket key."),
                ("assignee", str, ..., "User name or e-mail."),
            ]),
            ("addComment", "Comment on a {s} ticket.", [
                ("ticketId", str, ..., "The ticket key."),
                ("body", str, ..., "The comment, Markdown."),
                ("internal", bool, False, "Visible to the team only."),
            ]),
        ],
    ),
    "chat": (
        {"slack": "Slack", "teams": "Microsoft Teams"},
        [
            ("postMessage", "Post a message to a {s} channel or thread.", [
                ("channel", str, ..., "Channel name or id."),
                ("text", str, ..., "The message, Markdown."),
                ("threadId", str | None, None, "Reply in this thread."),
                ("mentions", list[str], [], "People to mention."),
            ]),
            ("searchMessages", "Search {s} messages.", [
                ("query", str, ..., "Search terms."),
                ("channel", str | None, None, "Only this channel."),
                ("fromUser", str | None, None, "Only messages by this person."),
                ("after", str | None, None, "Only after this date, ISO 8601."),
                ("count", int, 20, "At most this many messages."),
            ]),
            ("listChannels", "List the {s} channels the user can see.", [
                ("includeArchived", bool, False, "Include archived channels."),
                ("limit", int, 100, "At most this many channels."),
            ]),
            ("getThread", "Read a whole {s} thread.", [
                ("channel", str, ..., "Channel name or id."),
                ("threadId", str, ..., "The thread's first message id."),
            ]),
        ],
    ),
    "files": (
        {"drive": "Google Drive", "dropbox": "Dropbox"},
        [
            ("searchFiles", "Search files in {s} by name and content.", [
                ("query", str, ..., "Search terms."),
                ("mimeType", str | None, None, "Only files of this type."),
                ("folderId", str | None, None, "Only inside this folder."),
                ("modifiedAfter", str | None, None, "Only files changed after, ISO 8601."),
                ("pageSize", int, 25, "At most this many files."),
            ]),
            ("getFileMetadata", "Read a {s} file's metadata and sharing settings.", [
                ("fileId", str, ..., "The file."),
            ]),
            ("shareFile", "Share a {s} file with people.", [
                ("fileId", str, ..., "The file."),
                ("emails", list[str], ..., "Who gets access."),
                ("role", Literal["reader", "commenter", "writer"], "reader", "Access level."),
                ("notify", bool, True, "Send them an e-mail."),
            ]),
            ("createFolder", "Create a {s} folder.", [
                ("name", str, ..., "The folder name."),
                ("parentId", str | None, None, "Inside this folder; the root by default."),
            ]),
            ("moveFile", "Move a {s} file to another folder.", [
                ("fileId", str, ..., "The file."),
                ("folderId", str, ..., "The target folder."),
            ]),
        ],
    ),
    "wiki": (
        {"confluence": "Confluence", "notion": "Notion"},
        [
            ("searchPages", "Search {s} pages.", [
                ("query", str, ..., "Search terms."),
                ("space", str | None, None, "Only this space or workspace."),
                ("limit", int, 10, "At most this many pages."),
            ]),
            ("getPage", "Read a {s} page as Markdown.", [
                ("pageId", str, ..., "The page."),
                ("includeComments", bool, False, "Include the comments."),
            ]),
            ("createPage", "Create a {s} page.", [
                ("space", str, ..., "The space or parent page."),
                ("title", str, ..., "The page title."),
                ("body", str, ..., "The content, Markdown."),
                ("labels", list[str], [], "Labels to add."),
            ]),
            ("updatePage", "Replace or append to a {s} page's content.", [
                ("pageId", str, ..., "The page."),
                ("body", str, ..., "The content, Markdown."),
                ("mode", Literal["replace", "append"], "append", "How to apply the body."),
            ]),
        ],
    ),
    "support": (
        {"zendesk": "Zendesk"},
        [
            ("searchTickets", "Search {s} support tickets.", [
                ("query", str, ..., "Search terms."),
                ("status", Literal["new", "open", "pending", "solved"] | None, None, "Status."),
                ("requesterEmail", str | None, None, "Only tickets of this customer."),
            ]),
            ("replyToTicket", "Reply to a {s} ticket.", [
                ("ticketId", int, ..., "The ticket."),
                ("body", str, ..., "The reply."),
                ("public", bool, True, "Visible to the customer."),
                ("status", Literal["open", "pending", "solved"] | None, None, "New status."),
            ]),
            ("getTicket", "Read a {s} ticket with its conversation.", [
                ("ticketId", int, ..., "The ticket."),
            ]),
            ("createTicket", "Open a {s} ticket on behalf of a customer.", [
                ("requesterEmail", str, ..., "The customer's e-mail address."),
                ("subject", str, ..., "The subject line."),
                ("body", str, ..., "The first message."),
                ("priority", Literal["low", "normal", "high", "urgent"], "normal", "Priority."),
                ("tags", list[str], [], "Tags to add."),
            ]),
        ],
    ),
    "payments": (
        {"stripe": "Stripe"},
        [
            ("getCustomer", "Read a {s} customer with subscriptions.", [
                ("customerId", str | None, None, "The customer id."),
                ("email", str | None, None, "Or the customer's e-mail address."),
            ]),
            ("listInvoices", "List {s} invoices.", [
                ("customerId", str | None, None, "Only this customer's invoices."),
                ("status", Literal["draft", "open", "paid", "void"] | None, None, "Status."),
                ("createdAfter", str | None, None, "Only after this date, ISO 8601."),
                ("limit", int, 10, "At most this many invoices."),
            ]),
            ("createRefund", "Refund a {s} charge, fully or partly.", [
                ("chargeId", str, ..., "The charge."),
                ("amount", int | None, None, "Amount in cents; everything by default."),
                ("reason", Literal["duplicate", "fraudulent", "requested_by_customer"], ...,
                 "Why."),
            ]),
        ],
    ),
    "data": (
        {"postgres": "PostgreSQL", "bigquery": "BigQuery"},
        [
            ("runQuery", "Run a read-only SQL query on {s}.", [
                ("sql", str, ..., "One SELECT statement."),
                ("maxRows", int, 200, "At most this many rows."),
                ("timeoutSeconds", int, 30, "Give up after this long."),
            ]),
            ("listTables", "List the tables of a {s} schema.", [
                ("dataset", str, "public", "The schema or dataset."),
            ]),
            ("describeTable", "Describe the columns of a {s} table.", [
                ("table", str, ..., "schema.table."),
            ]),
        ],
    ),
    "ops": (
        {"sentry": "Sentry", "pagerduty": "PagerDuty"},
        [
            ("listIssues", "List {s} issues or incidents by status and time.", [
                ("project", str | None, None, "Only this project or service."),
                ("status", Literal["unresolved", "resolved", "acknowledged"], "unresolved",
                 "Status."),
                ("since", str | None, None, "Only after this time, ISO 8601."),
                ("limit", int, 25, "At most this many."),
            ]),
            ("resolveIssue", "Resolve or acknowledge a {s} issue or incident.", [
                ("issueId", str, ..., "The issue or incident."),
                ("action", Literal["resolve", "acknowledge", "ignore"], "resolve", "What to do."),
                ("note", str | None, None, "A note for the team."),
            ]),
        ],
    ),
    "sheets": (
        {"sheets": "Google Sheets"},
        [
            ("readRange", "Read cells from a {s} spreadsheet.", [
                ("spreadsheetId", str, ..., "The spreadsheet."),
                ("range", str, ..., "A1 notation, e.g. Sheet1!A1:D50."),
            ]),
            ("appendRows", "Append rows to a {s} sheet.", [
                ("spreadsheetId", str, ..., "The spreadsheet."),
                ("sheet", str, "Sheet1", "The sheet."),
                ("rows", list[list[str]], ..., "The rows to add."),
            ]),
            ("createSpreadsheet", "Create a {s} spreadsheet with named sheets.", [
                ("title", str, ..., "The spreadsheet title."),
                ("sheets", list[str], ["Sheet1"], "Names of its sheets."),
                ("shareWith", list[str], [], "E-mail addresses to share it with."),
            ]),
        ],
    ),
    "meetings": (
        {"zoom": "Zoom"},
        [
            ("createMeeting", "Schedule a {s} meeting and get its join link.", [
                ("topic", str, ..., "The meeting topic."),
                ("start", str, ..., "Start, ISO 8601."),
                ("durationMinutes", int, 30, "Length."),
                ("waitingRoom", bool, True, "Admit people one by one."),
            ]),
            ("listRecordings", "List {s} cloud recordings with transcripts.", [
                ("fromDate", str, ..., "From this date, ISO 8601."),
                ("toDate", str | None, None, "Until this date, ISO 8601."),
            ]),
        ],
    ),
}  # fmt: skip


async def _not_used(params: Any, ctx: ActionContext) -> ActionResult:
    return ActionResult(success=True, notes=["Done."])


def _model(name: str, doc: str, fields: list[Spec]) -> type[BaseModel]:
    definitions: dict[str, Any] = {
        field: (kind, Field(default, description=text)) for field, kind, default, text in fields
    }
    model = create_model(name, __config__=ConfigDict(extra="forbid"), **definitions)
    model.__doc__ = doc
    return model


def extra_tools() -> list[FakeTool]:
    """Every generated tool, families interleaved so that any first N cover many services."""
    families = []
    for services, templates in FAMILIES.values():
        family = []
        for template, (service, display) in ((t, s) for s in services.items() for t in templates):
            action, description, fields = template
            text = description.format(s=display)
            model = _model(f"{service.title()}{action[0].upper()}{action[1:]}", text, fields)
            family.append(FakeTool(f"{service}.{action}", text, model, False, _not_used))
        families.append(family)
    return [tool for row in zip_longest(*families) for tool in row if tool is not None]


def builtin_tools() -> list[FakeTool]:
    """The product's six actions as the model sees them, doing the tests' fake work."""
    real = {tool.name: tool for tool in CATALOG}
    tools = fake_tools()  # the real parameter models already, with short descriptions
    for tool in tools:
        tool.description = real[tool.name].description
    return tools


def catalog(size: int) -> list[FakeTool]:
    """The built-in actions, then generated ones up to `size` tools."""
    tools = [*builtin_tools(), *extra_tools()]
    if size > len(tools):
        raise ValueError(f"at most {len(tools)} tools can be generated")
    return tools[:size]


def openai_name(name: str) -> str:
    """A tool name OpenAI accepts: no dots."""
    return name.replace(".", "_")


def langchain_tools(
    tools: Sequence[FakeTool], respond: Callable[[str, dict[str, Any]], Awaitable[str]]
) -> list[StructuredTool]:
    """The same tools for a LangChain agent: the same parameter models, plus documentList for
    actions that read documents (PowerOn's Stage 1 picks those); `respond(name, args)` runs."""
    converted = []
    for tool in tools:
        schema = tool.Parameters
        if tool.uses_documents:
            schema = create_model(
                f"{schema.__name__}WithDocuments",
                __base__=schema,
                documentList=(
                    list[str],
                    Field(description="docList:<label> or docItem:<id>:<name> references."),
                ),
            )

        async def run(_name: str = tool.name, **args: Any) -> str:
            return await respond(_name, args)

        converted.append(
            StructuredTool(
                name=openai_name(tool.name),
                description=tool.description,
                args_schema=schema,
                coroutine=run,
            )
        )
    return converted
