"""PowerOn's HTTP API under /api/v1/: the same services and selectors as the page, for
programs, with personal API tokens, RFC 9457 problems and an OpenAPI 3.1 document.

Layout:
    tokens.py     personal API tokens: made, looked up by prefix, checked by digest, spent
                  (per-token requests per minute), revoked
    auth.py       who calls: `READ` and `RUN` (a bearer token with that scope, or the
                  browser's session with CSRF), `caller(request)` -> Principal(user, token)
    errors.py     `Problem(slug, detail)` and the registry of problem types; `install(api)`
                  turns every refusal (ninja's validation and auth, Django's 404) into
                  application/problem+json; `responses(409, ...)` documents extra ones
    schemas.py    pydantic inputs and outputs (inputs the socket also takes are its commands)
    shapes.py     rows -> answers (workflow, document, message, event, run state)
    routes/       one router per resource: workflows, messages, documents, runs, events,
                  and the events' live stream (SSE)
    event_schema.py  the JSON Schema of every event, made from the contract's union
    pages.py      the API tokens page of the app, the docs page and the problem pages
    __init__.py   this: the NinjaAPI, its OpenAPI touches, and `urlpatterns`

A new endpoint module: make a `Router()` in routes/<name>.py; give each operation
`auth=READ` or `auth=RUN` (never none: `caller(request)` asserts it), an explicit
`operation_id`, and `openapi_extra={"responses": responses(...)}` for the problems it may
raise beyond the ones every operation has (401, 403, 429; 404 with a workflow in the path;
422 with parameters or a body, added below); read the user as `caller(request).user` and
load what is theirs through the selectors (404 for anything else, never 403); raise
`Problem(...)` to refuse; add the router in `ROUTERS`. Async views for async services
(the launcher), sync otherwise. A streaming endpoint (SSE) authenticates the same way;
the browser's EventSource sends the session cookie, a program the bearer token.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from inspect import iscoroutinefunction
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, URLResolver, include, path, re_path
from ninja import NinjaAPI

from . import errors, event_schema, pages
from .auth import BearerToken
from .routes import documents, events, messages, runs, stream, workflows
from .schemas import Problem as ProblemSchema

NAMESPACE = "api-1"
ROUTERS = (
    workflows.router,
    messages.router,
    documents.router,
    runs.router,
    events.router,
    stream.router,
)
TAGS = [
    {"name": "workflows", "description": "Conversations with the agent."},
    {"name": "messages", "description": "Each message opens a round that runs in the background."},
    {"name": "documents", "description": "Uploads for the next message, and every document."},
    {"name": "runs", "description": "A workflow's run: its state, and stop, steer, answer."},
    {
        "name": "events",
        "description": "Every step, by seq (the socket's JSON), stored or live over SSE; "
        f"each event validates against [{event_schema.PATH}]({event_schema.PATH}).",
    },
]
DESCRIPTION = (
    "Everything the page does, for programs. Authenticate with a personal API token "
    "(`Authorization: Bearer pon_…`, made on the API tokens page): scope `read` to see, `run` "
    "to change anything. Refusals are RFC 9457 problem details (`application/problem+json`) "
    "with a stable `type`. Every event (`/events`, `/events/stream`) is described by the "
    f"JSON Schema at [{event_schema.PATH}]({event_schema.PATH}), made from the same types."
)


def scope_of(auth: Callable[..., Any]) -> str:
    """The scope an operation needs: READ and RUN name the bearer token first."""
    assert isinstance(auth, BearerToken), "an API operation without auth=READ or auth=RUN"
    return auth.scope


class PowerOnAPI(NinjaAPI):
    """The API, whose OpenAPI document also says each operation's scope and problems."""

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(**kwargs)
        scopes = {
            operation.operation_id: scope_of(operation.auth_callbacks[0])
            for bound in self._get_bound_routers()
            for view in bound.path_operations.values()
            for operation in view.operations
        }
        schema["components"]["schemas"]["Problem"] = ProblemSchema.model_json_schema()
        schema["tags"] = TAGS
        schema["externalDocs"] = {
            "description": "The JSON Schema of every event (`type` and `payload`)",
            "url": event_schema.PATH,
        }
        for route, operations in schema["paths"].items():
            for operation in operations.values():
                scope = scopes[operation["operationId"]]
                operation["security"] = [{"BearerToken": [scope]}, {"SessionCookie": []}]
                operation["description"] = (
                    f"{operation.get('description', '')}\n\nScope: `{scope}`.".strip()
                )
                common = [401, 403, 429]
                if "{workflow_id}" in route:
                    common.append(404)
                if operation.get("parameters") or operation.get("requestBody"):
                    common.append(422)
                if operation.get("requestBody"):
                    common.append(400)  # a body that cannot be read
                for status, answer in errors.responses(*common).items():
                    operation["responses"].setdefault(str(status), answer)
                answers = {str(status): answer for status, answer in operation["responses"].items()}
                operation["responses"] = dict(sorted(answers.items()))
        return schema


api = PowerOnAPI(
    title="PowerOn API",
    version="1",
    description=DESCRIPTION,
    urls_namespace=NAMESPACE,
    docs_url=None,  # the docs page is ours: server-rendered, under the app's CSP
)
errors.install(api)
for router in ROUTERS:
    api.add_router("", router)


def _open(view: Callable[..., Any]) -> Callable[..., Any]:
    """An API view reachable without the sign-in page (its auth answers 401 itself), whose
    405 is a problem too."""
    if iscoroutinefunction(view):

        async def opened(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return _method_problem(request, await view(request, *args, **kwargs))

    else:
        # Ignored for mypy below: the same name as the coroutine above.
        def opened(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[misc]
            return _method_problem(request, view(request, *args, **kwargs))

    opened.csrf_exempt = True  # type: ignore[attr-defined]  # the auth checks CSRF for sessions
    opened.login_required = False  # type: ignore[attr-defined]  # Django reads it as an attribute
    return opened


def _method_problem(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    if response.status_code != 405 or response.get("Content-Type") == errors.MEDIA_TYPE:
        return response
    detail = f"This address takes {response['Allow']}."
    return errors.Problem(
        "method-not-allowed", detail, headers={"Allow": response["Allow"]}
    ).response(request)


def _patterns() -> list[URLPattern | URLResolver]:
    found, _, _ = api.urls
    patterns: list[URLPattern | URLResolver] = []
    for pattern in found:
        assert isinstance(pattern, URLPattern)
        if pattern.name == "api-root":  # /api/v1/ itself: the docs
            pattern.callback = _open(lambda request, **kwargs: redirect(f"{NAMESPACE}:api-docs"))
        else:
            pattern.callback = _open(pattern.callback)
        patterns.append(pattern)
    return [
        path("docs", _open(partial(pages.docs_page, api=api)), name="api-docs"),
        path("problems/<slug:slug>", _open(pages.problem_page), name="api-problem"),
        path("events.schema.json", _open(event_schema.event_schema_view), name="event-schema"),
        *patterns,
        re_path(r"^.*$", _open(errors.not_found)),  # anything else under /api/v1/
    ]


urlpatterns = [path("api/v1/", include((_patterns(), "ninja"), namespace=NAMESPACE))]
"""Included by the project's urls."""
