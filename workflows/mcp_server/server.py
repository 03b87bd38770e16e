"""PowerOn's MCP server (the SDK's low-level `Server`): four tools in a fixed order, with
input and output schemas from `schemas`, and the caller's workflows as resources."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import CacheHint, Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from . import following, resources, tools
from .caller import ToolRefused, has_scope, principal_of
from .schemas import (
    ListWorkflowsIn,
    RunTaskIn,
    RunTaskOut,
    StopOut,
    WorkflowDetail,
    WorkflowIn,
    WorkflowList,
    schema_of,
)

INSTRUCTIONS = (
    "PowerOn is an agent that solves a task with a Plan -> Act -> Observe -> Refine loop "
    "(web search and fetch, document reading and writing, the user's own tools) and answers "
    "with what it found, plus the documents it produced. Call run_task with the task; it "
    "returns when the round ends (minutes for a long task), sending a progress line per step. "
    "Pass the returned workflow id to run_task again to go on in the same conversation. "
    "Everything also shows live on the workflow's page in PowerOn."
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it is called and does, its input and output, and its handler."""

    name: str
    title: str
    description: str
    input: type[BaseModel]
    output: type[BaseModel]
    run: Callable[[ServerRequestContext[Any, Any], Any], Awaitable[Any]]
    read_only: bool

    def listed(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=schema_of(self.input, mode="validation"),
            output_schema=schema_of(self.output, mode="serialization"),
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=self.read_only,
                open_world_hint=self.name == "run_task",
            ),
        )


async def run_task(ctx: ServerRequestContext[Any, Any], args: RunTaskIn) -> types.CallToolResult:
    opened = await tools.open_round(principal_of(ctx), args)
    page = tools.site_of(ctx) + opened.workflow.get_absolute_url()
    reading = await following.follow(ctx, opened, page)
    return await following.result(reading, opened, page)


async def list_workflows(ctx: ServerRequestContext[Any, Any], args: ListWorkflowsIn) -> Any:
    return await tools.list_workflows(principal_of(ctx), args)


async def get_workflow(ctx: ServerRequestContext[Any, Any], args: WorkflowIn) -> Any:
    return await tools.get_workflow(principal_of(ctx), args, tools.site_of(ctx))


async def stop_run(ctx: ServerRequestContext[Any, Any], args: WorkflowIn) -> Any:
    return await tools.stop_run(principal_of(ctx), args)


TOOLS = (
    ToolSpec(
        name="run_task",
        title="Run a task with PowerOn",
        description="Give PowerOn's agent a task and wait for its answer. The agent plans the "
        "task, then works step by step (choose an action, run it, observe the result, decide "
        "what next) and ends with an answer in Markdown and any documents it produced "
        "(embedded when they are small text, else as links to read with resources/read). A "
        "progress notification says each step's plan, act, observe and refine in one line. "
        "Takes from seconds to several minutes; cancelling the call stops the run. Set "
        "`workflow` to continue an earlier conversation. A question the run asks (more steps "
        "at the step limit, approving an action) comes as an elicitation when the client "
        "takes them; otherwise it is declined (no more steps; the action is rejected). "
        "Needs a token with the scope run.",
        input=RunTaskIn,
        output=RunTaskOut,
        run=run_task,
        read_only=False,
    ),
    ToolSpec(
        name="list_workflows",
        title="List PowerOn workflows",
        description="List your PowerOn workflows (conversations with the agent), newest "
        "activity first, with their status; `query` finds those whose title or messages hold "
        "every word. Needs the scope read.",
        input=ListWorkflowsIn,
        output=WorkflowList,
        run=list_workflows,
        read_only=True,
    ),
    ToolSpec(
        name="get_workflow",
        title="Get a PowerOn workflow",
        description="One of your workflows: its status (and the question it waits on, if "
        "any), its last task and answer, its documents with their URIs, and the URI of its "
        "whole Markdown export. Needs the scope read.",
        input=WorkflowIn,
        output=WorkflowDetail,
        run=get_workflow,
        read_only=True,
    ),
    ToolSpec(
        name="stop_run",
        title="Stop a PowerOn run",
        description="Stop the run going on in one of your workflows, now and for good: the "
        "model call and the action in flight are cancelled, what it did so far is kept, and it "
        "ends as stopped. Needs the scope run.",
        input=WorkflowIn,
        output=StopOut,
        run=stop_run,
        read_only=False,
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
LISTED = [tool.listed() for tool in TOOLS]


def refused(text: str) -> types.CallToolResult:
    """A tool error the calling model can read and correct."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def invalid(error: ValidationError) -> str:
    problems = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
        for problem in error.errors(include_url=False)
    ]
    return "Invalid arguments: " + "; ".join(problems)


async def on_list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=LISTED)


async def on_call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    tool = BY_NAME.get(params.name)
    if tool is None:
        known = ", ".join(BY_NAME)
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}. The tools are {known}.")
    try:
        args = tool.input.model_validate(params.arguments or {})
    except ValidationError as error:
        return refused(invalid(error))
    try:
        answer = await tool.run(ctx, args)
    except ToolRefused as refusal:
        return refused(str(refusal))
    if isinstance(answer, types.CallToolResult):
        return answer
    data = answer.model_dump(mode="json")
    text = json.dumps(data, ensure_ascii=False, indent=1)
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data)


async def on_list_resources(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    principal = principal_of(ctx)
    if not has_scope(principal, "read"):
        return types.ListResourcesResult(resources=[])
    return await resources.list_resources(principal.user, params.cursor if params else None)


async def on_list_resource_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=resources.TEMPLATES)


async def on_read_resource(
    ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    principal = principal_of(ctx)
    if not has_scope(principal, "read"):
        raise resources.not_found(str(params.uri))
    return await resources.read_resource(principal.user, str(params.uri))


async def on_read_completion(
    ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
) -> types.CompleteResult:
    principal = principal_of(ctx)
    if not has_scope(principal, "read"):
        return types.CompleteResult(completion=types.Completion(values=[]))
    return await resources.complete(principal.user, params)


async def on_list_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    """PowerOn offers no prompts: its tools are the way in."""
    return types.ListPromptsResult(prompts=[])


async def on_set_logging_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    """Accepted (protocol versions up to 2025-11-25); PowerOn reports a run's steps as
    progress, not as log messages."""
    return types.EmptyResult()


PUBLIC = CacheHint(ttl_ms=300_000, scope="public")
"""The same for every caller, for five minutes."""
server: Server[Any] = Server(
    "poweron",
    version="1",
    title="PowerOn",
    description="An agent with a live Plan -> Act -> Observe -> Refine loop, as MCP tools.",
    instructions=INSTRUCTIONS,
    on_list_tools=on_list_tools,
    on_call_tool=on_call_tool,
    on_list_resources=on_list_resources,
    on_list_resource_templates=on_list_resource_templates,
    on_read_resource=on_read_resource,
    on_list_prompts=on_list_prompts,
    on_completion=on_read_completion,
    cache_hints={
        "tools/list": PUBLIC,
        "prompts/list": PUBLIC,
        "resources/templates/list": PUBLIC,
        "resources/list": CacheHint(ttl_ms=0, scope="private"),
        "resources/read": CacheHint(ttl_ms=0, scope="private"),
    },
)
"""The one server every session of the endpoint serves."""
# Through add_request_handler: the constructor's argument warns that logging is deprecated
# in 2026-07-28, where the SDK does not route it anyway.
server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, on_set_logging_level)
