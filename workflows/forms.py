"""Forms of the chat."""

from urllib.parse import urlsplit

from django import forms
from django.conf import settings

from .models import ChatWorkflow, Connection


class WorkflowCreateForm(forms.ModelForm):
    """A new workflow: its mode and step limit; the title comes from the first message."""

    class Meta:
        model = ChatWorkflow
        fields = ("title", "mode", "max_steps")
        widgets = {"title": forms.TextInput(attrs={"placeholder": "Untitled workflow"})}

    def clean_max_steps(self) -> int:
        steps = self.cleaned_data["max_steps"]
        if not 1 <= steps <= 50:
            raise forms.ValidationError("Choose between 1 and 50 steps per task.")
        return steps


class ConnectionForm(forms.ModelForm):
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
            "kind": forms.Select(
                choices=[("tavily", "Tavily (web search)"), ("mcp", "MCP server (streamable HTTP)")]
            ),
        }
        help_texts = {
            "label": "A short name the agent can refer to, e.g. my-tavily; an MCP server's "
            "tools are named after it (my-wiki → my_wiki.search).",
        }

    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.owner = owner

    def clean_label(self) -> str:
        label = self.cleaned_data["label"]
        if Connection.objects.filter(owner=self.owner, label=label).exists():
            raise forms.ValidationError("You already have a connection with this label.")
        return label

    def clean(self) -> dict:
        data = super().clean()
        kind, url, secret = data.get("kind"), data.get("url", ""), data.get("secret", "")
        if kind == "mcp":
            self._check_mcp(data.get("label", ""), url, secret)
        else:
            if url:
                self.add_error("url", "Only an MCP server has a URL.")
            if not secret:
                self.add_error("secret", "This kind of connection needs its secret.")
        return data

    def _check_mcp(self, label: str, url: str, secret: str) -> None:
        from workflows.tools import mcp_servers
        from workflows.tools.addresses import literal_reason

        if not url:
            self.add_error("url", "An MCP server needs its URL.")
            return
        if label and mcp_servers.user_server(label=label, url=url, secret=secret, owner=0) is None:
            self.add_error(
                "label",
                "An MCP server's label names its tools: lowercase letters, digits, - or _, "
                "starting with a letter, and not web, document or ai.",
            )
        host = (urlsplit(url).hostname or "").lower()
        reason = literal_reason(host)
        if reason and host not in settings.POWERON_FETCH_ALLOW_HOSTS:
            self.add_error("url", f"{host} is {reason}: only public servers can be added.")
