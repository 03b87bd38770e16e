"""Refusals of the OpenAI-compatible endpoint, in OpenAI's error shape
(`{"error": {"message", "type", "param", "code"}}`) with the HTTP status its clients act
on: the API's own problems (a token refused, the rate limit) keep their status, headers and
meaning, their slug as the `code`."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from workflows import services
from workflows.api.errors import REALM, Problem, field_errors
from workflows.execution import launcher

logger = logging.getLogger(__name__)

TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    429: "rate_limit_error",
    500: "server_error",
}
"""OpenAI's error types by status; any other refusal is an `invalid_request_error`."""


class OpenAIError(Exception):
    """A refusal of the endpoint: raise it from a view."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = headers or {}

    def response(self) -> HttpResponse:
        body = {
            "error": {
                "message": self.message,
                "type": TYPES.get(self.status, "invalid_request_error"),
                "param": self.param,
                "code": self.code,
            }
        }
        text = json.dumps(body, ensure_ascii=False)
        response = HttpResponse(text, status=self.status, content_type="application/json")
        for name, value in self.headers.items():
            response[name] = value
        return response

    @classmethod
    def of(cls, problem: Problem) -> OpenAIError:
        """The API's problem, said as OpenAI says it."""
        return cls(
            problem.kind.status,
            problem.detail,
            code=problem.kind.slug.replace("-", "_"),
            headers=problem.headers,
        )


def refusal(refused: launcher.CommandRefused) -> OpenAIError:
    """Why a round did not start, by what refused it (nothing was stored)."""
    cause, text = refused.__cause__, str(refused)
    if isinstance(cause, services.RateLimited):
        wait = str(max(1, int(cause.retry_after)))
        return OpenAIError(429, text, code="rate_limited", headers={"Retry-After": wait})
    if isinstance(cause, services.TooManyRuns):
        return OpenAIError(429, text, code="too_many_runs")
    return OpenAIError(409, text, code="already_running")


def install(api: NinjaAPI) -> None:
    """Make every refusal of `api` an OpenAI error: its own, the API's problems, ninja's and
    Django's."""

    @api.exception_handler(OpenAIError)
    def on_error(request: HttpRequest, exc: OpenAIError) -> HttpResponse:
        return exc.response()

    @api.exception_handler(Problem)
    def on_problem(request: HttpRequest, exc: Problem) -> HttpResponse:
        return OpenAIError.of(exc).response()

    @api.exception_handler(AuthenticationError)
    def on_unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
        message = "Send Authorization: Bearer <token> with a personal API token of scope run."
        refused = OpenAIError(401, message, code="invalid_api_key")
        refused.headers["WWW-Authenticate"] = REALM
        return refused.response()

    @api.exception_handler(ValidationError)
    def on_invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        errors = field_errors(exc.errors)
        message = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return OpenAIError(400, message, param=errors[0]["field"] if errors else None).response()

    @api.exception_handler(HttpError)
    def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        return OpenAIError(exc.status_code, str(exc)).response()

    @api.exception_handler(Http404)
    def on_not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
        return not_found(request)

    @api.exception_handler(Exception)
    def on_exception(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.error("%s %s failed", request.method, request.path, exc_info=exc)
        message = "Something failed on the server; it is logged. Try again later."
        return OpenAIError(500, message, code="internal").response()


def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Anything else under /v1/."""
    message = f"Nothing at {request.path}: the endpoints are /v1/models and /v1/chat/completions."
    return OpenAIError(404, message, code="not_found").response()


def responses(*statuses: int) -> dict[int, Any]:
    """OpenAPI `responses` entries for refusals with these statuses."""
    reference = {"$ref": "#/components/schemas/Error"}
    return {
        status: {
            "description": TYPES.get(status, "invalid_request_error"),
            "content": {"application/json": {"schema": reference}},
        }
        for status in statuses
    }
