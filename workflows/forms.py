"""Forms of the chat."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings

from .models import ChatWorkflow, Connection
from .sealing import is_unreadable

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class WorkflowCreateForm(forms.ModelForm[ChatWorkflow]):
    """A new workflow: its mode and step limit; the title comes from the first message."""

    class Meta:
        model = ChatWorkflow
        fields = ("title", "mode", "max_steps")
        widgets = {"title": forms.TextInput(attrs={"placeholder": "Untitled workflow"})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["max_steps"].widget.attrs.update(min=1, max=50)  # what clean_max_steps allows

    def clean_max_steps(self) -> int:
        steps: int = self.cleaned_data["max_steps"]
        if not 1 <= steps <= 50:
            raise forms.ValidationError("Choose between 1 and 50 steps per task.")
        return steps


CONNECTION_KINDS = [("tavily", "Tavily (web search)"), ("mcp", "MCP server (streamable HTTP)")]
"""What a connection can be."""


def origin_of(url: str) -> tuple[str, str, int]:
    """scheme, host and port: where a server's token is sent."""
    from workflows.tools.web.addresses import url_port

    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), url_port(parts)


RETARGETED = (
    "A new server address needs its token again: the stored one was given for {old} only, "
    "and is never sent anywhere else."
)


def kept_secret_retargeted(instance: Connection, url: str, secret: str) -> str:
    """The refusal when a stored secret would be kept while the server's address moves to
    another origin ("" when it is not): a kept token goes only where it was given."""
    kept = bool(instance.secret) or is_unreadable(instance.secret)  # unreadable reads as ""
    if not instance.pk or secret or not kept or not instance.url:
        return ""
    if origin_of(instance.url) == origin_of(url):
        return ""
    scheme, host, port = origin_of(instance.url)
    return RETARGETED.format(old=f"{scheme}://{host}:{port}")


class McpChecks:
    """The checks of a user's own MCP server, for the forms that add one (the user's and the
    admin's): its label names its tools, its URL must be a public http(s) address."""

    add_error: Any
    errors: Any

    def check_mcp(self, owner: Any, label: str, url: str) -> None:
        """An MCP server's label and URL, checked for `owner`: errors go on the fields."""
        from workflows.execution.setup import site_mcp_servers
        from workflows.tools.mcp import servers as mcp_servers
        from workflows.tools.web.addresses import is_allowed, literal_reason, url_port

        if label:
            name = mcp_servers.server_name(label)
            self._check_server_name(owner, label, name, site_mcp_servers())
        if "url" in self.errors:  # not a URL at all: said once, on the field
            return
        if not url:
            self.add_error("url", "An MCP server needs its URL.")
            return
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            self.add_error("url", "An MCP server's URL starts with https:// (or http://).")
            return
        host = (parts.hostname or "").lower()
        reason = literal_reason(host)
        if reason and not is_allowed(host, url_port(parts), settings.POWERON_FETCH_ALLOW_HOSTS):
            self.add_error("url", f"{host} is {reason}: only public servers can be added.")

    def _check_server_name(self, owner: Any, label: str, name: str, site: Sequence[Any]) -> None:
        """The label names the server's tools (`name.<tool>`): a valid name, and one that
        neither a server of this site nor another of the user's servers already has."""
        from workflows.tools.mcp.servers import name_problem, server_name

        if problem := name_problem(name):
            self.add_error("label", f"This label would name the tools {name}.<tool>: {problem}.")
        elif name in {server.name for server in site}:
            self.add_error(
                "label",
                f"{name} is the name of an MCP server this site provides; its tools would "
                "hide yours. Choose another label.",
            )
        elif twin := next(
            (
                other.label
                for other in Connection.objects.filter(owner=owner, kind="mcp")
                if server_name(other.label) == name and other.label != label
            ),
            None,
        ):
            self.add_error(
                "label",
                f"Your server {twin} already names its tools {name}.<tool>; choose another label.",
            )


class ConnectionForm(McpChecks, forms.ModelForm[Connection]):
    """A user's own provider credential, or their own MCP server (streamable HTTP, with an
    optional bearer token). The secret is write-only: never shown again."""

    secret = forms.CharField(
        widget=forms.PasswordInput(render_value=False),
        strip=True,
        required=False,
        help_text="For an MCP server: its bearer token, if it wants one.",
    )
    url = forms.URLField(
        required=False,
        max_length=500,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"placeholder": "https://mcp.example.com/mcp"}),
        help_text="MCP servers only: the server's streamable-HTTP endpoint.",
    )

    class Meta:
        model = Connection
        fields = ("label", "kind", "url", "secret")
        widgets = {
            "kind": forms.Select(choices=CONNECTION_KINDS),
        }
        help_texts = {
            "label": "A short name the agent can refer to, e.g. my-tavily; an MCP server's "
            "tools are named after it (my-wiki → my_wiki.search).",
        }

    def __init__(self, *args: Any, owner: User | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        if self.editing:  # the label names the tools and the kind what the secret is for
            self.fields["label"].disabled = True
            self.fields["kind"].disabled = True
            self.fields["secret"].help_text = "Leave it empty to keep the one stored."

    @property
    def editing(self) -> bool:
        """Whether the form changes a stored connection (its URL or secret)."""
        return self.instance.pk is not None

    def clean_label(self) -> str:
        label: str = self.cleaned_data["label"]
        others = Connection.objects.filter(owner=self.owner, label=label)
        if others.exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError("You already have a connection with this label.")
        return label

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns its cleaned_data
        kind, url = data.get("kind"), data.get("url", "")
        if kind == "mcp":
            self.check_mcp(self.owner, data.get("label", ""), url)
            if refusal := kept_secret_retargeted(self.instance, url, data.get("secret", "")):
                self.add_error("secret", refusal)
        else:
            if url:
                self.add_error("url", "Only an MCP server has a URL.")
            if not data.get("secret", "") and not (self.editing and self.instance.secret):
                self.add_error("secret", "This kind of connection needs its secret.")
        return data
