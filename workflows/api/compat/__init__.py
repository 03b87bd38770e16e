"""The OpenAI-compatible endpoint under /v1/: PowerOn's modes as models and a chat completion
that runs a round, so an OpenAI client (the official SDKs, Open WebUI, LibreChat) can use
PowerOn as it would a model. A personal API token of scope `run` is its key.

Layout:
    schemas.py  the request and the answers, in OpenAI's shapes
    answer.py   one round's events read as a chat answer: its text, its usage, its end
    errors.py   refusals in OpenAI's error shape
    routes.py   GET /v1/models, GET /v1/models/{model}, POST /v1/chat/completions
    __init__.py this: its NinjaAPI (its OpenAPI document at /v1/openapi.json) and urlpatterns
"""

from __future__ import annotations

from collections.abc import Callable
from inspect import iscoroutinefunction
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver, include, path, re_path
from ninja import NinjaAPI

from . import errors, routes
from .schemas import Error

NAMESPACE = "openai-v1"


class CompatAPI(NinjaAPI):
    """The endpoint's API, whose OpenAPI document also lists every operation's refusals."""

    def get_openapi_schema(self, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(**kwargs)
        schema["components"]["schemas"]["Error"] = Error.model_json_schema()
        for operations in schema["paths"].values():
            for operation in operations.values():
                statuses = [401, 403, 429]
                if operation.get("parameters"):
                    statuses.append(404)
                if operation.get("requestBody"):
                    statuses += [400, 404, 409]
                answers = {str(status): answer for status, answer in operation["responses"].items()}
                for status, answer in errors.responses(*statuses).items():
                    answers.setdefault(str(status), answer)
                operation["responses"] = dict(sorted(answers.items()))
                operation["security"] = [{"BearerToken": ["run"]}]
        return schema


api = CompatAPI(
    title="PowerOn, OpenAI-compatible",
    version="1",
    description=(
        "PowerOn's modes as models for any OpenAI client: a chat completion runs the last user "
        "message as a round of a workflow and answers with the round's answer. The key is a "
        "personal API token of scope `run`. Refusals are OpenAI's error objects."
    ),
    urls_namespace=NAMESPACE,
    docs_url=None,
)
errors.install(api)
api.add_router("", routes.router)


def _open(view: Callable[..., Any]) -> Callable[..., Any]:
    """A view reachable without the sign-in page (the token is its key), whose 405 is in
    OpenAI's error shape."""
    if iscoroutinefunction(view):

        async def opened(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            return _method(await view(request, *args, **kwargs))

    else:
        # Ignored for mypy below: the same name as the coroutine above.
        def opened(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[misc]
            return _method(view(request, *args, **kwargs))

    opened.csrf_exempt = True  # type: ignore[attr-defined]  # a bearer token, never a cookie
    opened.login_required = False  # type: ignore[attr-defined]  # Django reads it as an attribute
    return opened


def _method(response: HttpResponse) -> HttpResponse:
    if response.status_code != 405 or response.get("Content-Type") == "application/json":
        return response
    refused = errors.OpenAIError(405, f"This address takes {response['Allow']}.")
    refused.headers["Allow"] = response["Allow"]
    return refused.response()


def _patterns() -> list[URLPattern | URLResolver]:
    found, _, _ = api.urls
    patterns: list[URLPattern | URLResolver] = []
    for pattern in found:
        assert isinstance(pattern, URLPattern)
        pattern.callback = _open(pattern.callback)
        patterns.append(pattern)
    return [*patterns, re_path(r"^.*$", _open(errors.not_found))]


urlpatterns = [path("v1/", include((_patterns(), "ninja"), namespace=NAMESPACE))]
"""Included by the project's urls."""
