"""Every refusal of the API as RFC 9457 problem details (`application/problem+json`), each
with a stable `type`: a path under /api/v1/problems/ that describes it (resolve it against
the API's address). A program acts on `status` and `type`; `detail` is for people."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/problem+json"
TYPE_BASE = "/api/v1/problems/"
REALM = 'Bearer realm="PowerOn"'


@dataclass(frozen=True)
class ProblemType:
    """One kind of refusal: its stable slug, HTTP status, title, and what it means."""

    slug: str
    status: int
    title: str
    description: str

    @property
    def uri(self) -> str:
        return TYPE_BASE + self.slug


TYPES: dict[str, ProblemType] = {
    kind.slug: kind
    for kind in [
        ProblemType("bad-request", 400, "Bad request",
                    "The request could not be read (a malformed body or form)."),
        ProblemType("unauthenticated", 401, "Authentication required",
                    "No credentials: send `Authorization: Bearer <token>` with a personal API "
                    "token (made on the API tokens page)."),
        ProblemType("token-invalid", 401, "Unknown token",
                    "The bearer token is not one of this site's tokens (mistyped, or its "
                    "owner's account is disabled). Make a new one."),
        ProblemType("token-expired", 401, "Token expired",
                    "The token's expiry has passed. Make a new one."),
        ProblemType("token-revoked", 401, "Token revoked",
                    "The token was revoked by its owner or a staff member. Make a new one."),
        ProblemType("insufficient-scope", 403, "Scope missing",
                    "The token lacks the scope this operation needs (`read` to see, `run` to "
                    "change anything). Make a token with that scope."),
        ProblemType("csrf-failed", 403, "CSRF check failed",
                    "A request authenticated by the browser's session cookie that changes "
                    "something needs the CSRF token (header `X-CSRFToken`). Programs use a "
                    "bearer token, which needs none."),
        ProblemType("not-found", 404, "Not found",
                    "Nothing of yours has this address: a workflow or document that does not "
                    "exist and another user's look the same."),
        ProblemType("method-not-allowed", 405, "Method not allowed",
                    "This address does not take that method; the `Allow` header lists those "
                    "it takes."),
        ProblemType("already-running", 409, "Workflow busy",
                    "A run is going in this workflow (or still stopping): stop it, or wait "
                    "for its final status, then try again."),
        ProblemType("too-many-runs", 409, "Too many runs at once",
                    "You have as many runs going as one user may have at once "
                    "(POWERON_MAX_RUNS_PER_USER); wait for one to finish or stop one."),
        ProblemType("not-running", 409, "Nothing running",
                    "Nothing runs in this workflow now, so there is nothing to stop or steer."),
        ProblemType("no-open-question", 409, "Nothing waits for that answer",
                    "The run does not wait for this answer now (it was answered, the run "
                    "went on, or ended). Read the run's status for its open question."),
        ProblemType("length-required", 411, "Length required",
                    "Send the upload with a Content-Length: a chunked body cannot be read."),
        ProblemType("too-large", 413, "Too large",
                    "A file (or the whole request) is larger than POWERON_MAX_UPLOAD_BYTES, "
                    "or there are more files than one request may carry. Nothing was stored."),
        ProblemType("unsupported-media-type", 415, "Unsupported media type",
                    "Uploads are `multipart/form-data` with the files in the field `files`; "
                    "other bodies are JSON."),
        ProblemType("invalid-input", 422, "Invalid input",
                    "A value is missing or wrong: `errors` names each field (`field`, dotted "
                    "for nested ones) with what is wrong. Nothing was stored."),
        ProblemType("rate-limited", 429, "Too many requests",
                    "A limit was reached: the token's requests per minute "
                    "(POWERON_API_REQUESTS_PER_MINUTE), or your rounds or uploads per hour. "
                    "`Retry-After` says how many seconds to wait."),
        ProblemType("internal", 500, "Internal error",
                    "Something failed on the server; it is logged. Try again later."),
    ]
}  # fmt: skip


class Problem(Exception):
    """A refusal to answer as problem details: raise it from a view or an auth check."""

    def __init__(
        self,
        slug: str,
        detail: str = "",
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail or TYPES[slug].title)
        self.kind = TYPES[slug]
        self.detail = detail or self.kind.title
        self.headers = headers or {}
        self.extra = extra

    def document(self, instance: str) -> dict[str, Any]:
        """The problem details of a request to `instance` (a path)."""
        return {
            "type": self.kind.uri,
            "title": self.kind.title,
            "status": self.kind.status,
            "detail": self.detail,
            "instance": instance,
            **self.extra,
        }

    def response(self, request: HttpRequest) -> HttpResponse:
        """The problem as an HTTP response."""
        body = json.dumps(self.document(request.path), ensure_ascii=False)
        response = HttpResponse(body, status=self.kind.status, content_type=MEDIA_TYPE)
        for name, value in self.headers.items():
            response[name] = value
        if self.kind.status == 401 and "WWW-Authenticate" not in response:
            response["WWW-Authenticate"] = REALM
        return response


def invalid(field: str, message: str) -> Problem:
    """A 422 naming one field."""
    return Problem(
        "invalid-input", f"{field}: {message}", errors=[{"field": field, "message": message}]
    )


def rate_limited(detail: str, retry_after: int) -> Problem:
    """A 429 with how long to wait."""
    wait = max(1, int(retry_after))
    return Problem("rate-limited", detail, headers={"Retry-After": str(wait)}, retryAfter=wait)


def field_errors(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Pydantic's errors as `{field, message}`: the field dotted, without where it was sent
    (path, query, body) or the name of the body's parameter."""
    found = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        if location and location[0] in {"body", "query", "path", "form", "file", "header"}:
            source = location.pop(0)
            if source == "body" and location and location[0] == "payload":
                location.pop(0)
        message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
        found.append({"field": ".".join(location) or "body", "message": message})
    return found


def install(api: NinjaAPI) -> None:
    """Make every refusal of `api` problem details: its own, ninja's, Django's."""

    @api.exception_handler(Problem)
    def on_problem(request: HttpRequest, exc: Problem) -> HttpResponse:
        return exc.response(request)

    @api.exception_handler(AuthenticationError)
    def on_unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
        detail = "Send Authorization: Bearer <token> with a personal API token."
        return Problem("unauthenticated", detail).response(request)

    @api.exception_handler(ValidationError)
    def on_invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        errors = field_errors(exc.errors)
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return Problem("invalid-input", detail, errors=errors).response(request)

    @api.exception_handler(HttpError)
    def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        slug = {405: "method-not-allowed", 429: "rate-limited"}.get(exc.status_code, "bad-request")
        return Problem(slug, str(exc)).response(request)

    @api.exception_handler(Http404)
    def on_not_found(request: HttpRequest, exc: Exception) -> HttpResponse:
        return not_found(request)

    @api.exception_handler(SuspiciousOperation)
    def on_suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
        if isinstance(exc, TooManyFilesSent | RequestDataTooBig):
            return Problem("too-large", str(exc)).response(request)
        return Problem("bad-request", "The request could not be read.").response(request)

    @api.exception_handler(Exception)
    def on_error(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.error("API request %s %s failed", request.method, request.path, exc_info=exc)
        return Problem("internal").response(request)


def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """The one 404 of the API: the same for what does not exist and for what is another
    user's (its detail names nothing)."""
    return Problem("not-found", "Nothing of yours has this address.").response(request)


def responses(*statuses: int) -> dict[int, Any]:
    """OpenAPI `responses` entries for problems with these statuses."""
    reference = {"$ref": "#/components/schemas/Problem"}
    described: dict[int, list[str]] = {}
    for kind in TYPES.values():
        described.setdefault(kind.status, []).append(kind.slug)
    return {
        status: {
            "description": ", ".join(described.get(status, ["problem"])),
            "content": {MEDIA_TYPE: {"schema": reference}},
        }
        for status in statuses
    }
