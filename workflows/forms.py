"""Forms of the chat."""

from django import forms

from .models import ChatWorkflow


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
