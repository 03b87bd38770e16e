"""The API's pages for people: the API tokens page (beside Connections), the reference made
from the OpenAPI document, and one page per problem type (what a problem's `type` names).
Server-rendered, so they hold under the app's Content-Security-Policy (no script from
elsewhere, no inline script or style)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from workflows import selectors
from workflows.forms import WorkflowCreateForm
from workflows.markdown import render_markdown
from workflows.models import ApiToken

from . import tokens
from .errors import TYPES, not_found

if TYPE_CHECKING:
    from workflows.signed_in import SignedInRequest

EXPIRY_CHOICES = [("7", "7 days"), ("30", "30 days"), ("90", "90 days"), ("365", "a year")]
EXPIRY_CHOICES += [("", "never")]


class TokenForm(forms.Form):
    """A new token: a name to know it by, its scopes and when it expires."""

    name = forms.CharField(max_length=100, help_text="What uses it, e.g. “nightly report”.")
    scopes = forms.MultipleChoiceField(
        choices=ApiToken.Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[ApiToken.Scope.READ],
    )
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="90", required=False)

    def expires(self) -> Any:
        days = self.cleaned_data.get("expires_in")
        return timezone.now() + timedelta(days=int(days)) if days else None


def token_list(request: SignedInRequest) -> HttpResponse:
    """The user's API tokens (never their secrets), and a form to make one; a token just
    made is shown this once."""
    form = TokenForm(request.POST or None)
    made = None
    if request.method == "POST" and form.is_valid():
        made = tokens.token_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires=form.expires(),
        )
        form = TokenForm()
    context = {
        "tokens": tokens.token_list(user=request.user),
        "token_form": form,
        "made": made,
        "workflows": selectors.workflow_list(user=request.user),
        "form": WorkflowCreateForm(),
        "now": timezone.now(),
    }
    status = 400 if request.method == "POST" and made is None else 200
    response = render(request, "workflows/tokens.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the token shown once is in no cache either
    return response


@require_POST
def token_revoke(request: SignedInRequest, token_id: int) -> HttpResponse:
    """Revoke one of the user's tokens: its next request is refused."""
    token = tokens.token_get(user=request.user, token_id=token_id)
    tokens.token_revoke(token=token)
    messages.success(request, f"Revoked the token “{token.name}”.")
    return redirect("workflows:tokens")


def docs_page(request: HttpRequest, *, api: Any) -> HttpResponse:
    """The API's reference, made from its OpenAPI document."""
    schema = api.get_openapi_schema()
    components = schema["components"]["schemas"]
    operations = [
        {
            "method": method.upper(),
            "path": route,
            "id": operation["operationId"],
            "summary": operation.get("summary", ""),
            "description": render_markdown(operation.get("description", "")),
            "tag": (operation.get("tags") or [""])[0],
            "parameters": [
                {**p, "type": type_of(p.get("schema", {}))} for p in operation["parameters"]
            ],
            "body": body_of(operation, components),
            "responses": [
                {"status": status, "description": answer.get("description", ""),
                 "type": answer_type(answer)}
                for status, answer in sorted(operation["responses"].items())
            ],
        }
        for route, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]  # fmt: skip
    models = [
        {
            "name": name,
            "description": model.get("description", ""),
            "fields": fields_of(model),
        }
        for name, model in sorted(schema["components"]["schemas"].items())
    ]
    context = {
        "schema": schema,
        "description": render_markdown(schema["info"]["description"]),
        "operations": operations,
        "models": models,
        "problems": TYPES.values(),
    }
    return render(request, "api/docs.html", context)


def problem_page(request: HttpRequest, slug: str) -> HttpResponse:
    """What one problem type means (its `type` URI is this page's address)."""
    kind = TYPES.get(slug)
    if kind is None:
        return not_found(request)
    return render(request, "api/problem.html", {"kind": kind})


def type_of(schema: dict[str, Any]) -> str:
    """A JSON schema as a short readable type: `list of DocumentOut`, `integer ≥ 1`."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "anyOf" in schema:
        return " or ".join(type_of(option) for option in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(f"“{value}”" for value in schema["enum"])
    if "const" in schema:
        return f"“{schema['const']}”"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {type_of(schema.get('items', {}))}"
    if schema.get("format") == "binary":
        return "file"
    bounds = [
        f"{sign} {schema[key]}"
        for key, sign in (("minimum", "≥"), ("maximum", "≤"), ("minLength", "length ≥"),
                          ("maxLength", "length ≤"))
        if key in schema
    ]  # fmt: skip
    return " ".join([str(kind), *bounds]) if bounds else str(kind)


def fields_of(schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", []))
    return [
        {
            "name": name,
            "type": type_of(field),
            "required": name in required,
            "description": field.get("description", ""),
        }
        for name, field in schema.get("properties", {}).items()
    ]


def body_of(operation: dict[str, Any], components: dict[str, Any]) -> dict[str, Any] | None:
    body = operation.get("requestBody")
    if not body:
        return None
    media, content = next(iter(body["content"].items()))
    schema = content.get("schema", {})
    named = components.get(type_of(schema), schema) if "$ref" in schema else schema
    return {"media": media, "type": type_of(schema), "fields": fields_of(named)}


def answer_type(answer: dict[str, Any]) -> str:
    content = answer.get("content") or {}
    return ", ".join(f"{media}: {type_of(c.get('schema', {}))}" for media, c in content.items())
