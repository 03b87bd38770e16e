"""Forms of the chat."""

from django import forms

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
    """A user's own provider credential. The secret is write-only: never shown again."""

    secret = forms.CharField(widget=forms.PasswordInput(render_value=False), strip=True)

    class Meta:
        model = Connection
        fields = ("label", "kind", "secret")
        widgets = {"kind": forms.Select(choices=[("tavily", "Tavily (web search)")])}
        help_texts = {"label": "A short name the agent can refer to, e.g. my-tavily."}

    def __init__(self, *args, owner=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.owner = owner

    def clean_label(self) -> str:
        label = self.cleaned_data["label"]
        if Connection.objects.filter(owner=self.owner, label=label).exists():
            raise forms.ValidationError("You already have a connection with this label.")
        return label
