"""PowerOn as an MCP server: `/mcp`, streamable HTTP, for any MCP client (desktop assistants,
IDEs, other agents). A run started here is a round like any other: the same launcher, limits,
budgets and durable run, visible live in the page and in admin.

Layout:
    endpoint.py  the ASGI app mounted beside Django: Host and Origin checks (403), the bearer
                 token (401 with WWW-Authenticate, 429), and the SDK's session manager,
                 started in the server's own loop on the first request (Daphne has no ASGI
                 lifespan)
    server.py    the SDK's low-level `Server`: tools/list and tools/call in a fixed order,
                 resources/list, resources/templates/list and resources/read
    caller.py    who calls: the principal the endpoint put in the scope, and scope checks
    schemas.py   the tools' inputs and outputs (pydantic: the JSON Schemas clients see)
    tools.py     list_workflows, get_workflow, stop_run, and opening run_task's round
    following.py run_task while its round runs: a progress line per step, the step-limit
                 question and approvals by elicitation (else the documented default), a
                 cancelled call stops the round, and the result at the round's end
    resources.py poweron:// URIs: a workflow's Markdown export and its documents, the
                 caller's only

The caller is the token's owner (`Principal`, as the HTTP API has it), put in the request's
ASGI scope by the endpoint and read by every handler with `principal_of(ctx)`.
"""
