"""A round's tasks as they run: each task's steps as later prompts and people see them, and
the codes of why a task's loop stopped."""

from __future__ import annotations

from dataclasses import dataclass, field

from workflows.engine.records.protocols import untrusted
from workflows.engine.records.schemas import ActionPlan, ActionSelection, Observation, TaskItem

STEPS_SHOWN = 8
"""How many of a task's steps its prompts list line by line (the newest)."""


STEP_ENDINGS = {"success": "succeeded", "rejected": "rejected by the user", "stopped": "stopped"}
"""A step's end status as a word for people (failed stays failed)."""
MODEL_STOP_CODES = frozenset({"criteria_met", "no_improvement"})
"""Stops that refine decided, with the model's reason; every other stop is the host's."""
BUDGET_CODES = frozenset({"token_budget", "cost_budget", "time_budget"})
"""Stops for a spent budget."""
CUT_SHORT_CODES = BUDGET_CODES | {"max_steps"}
"""Stops the host made while the work may go on: a limit or a budget (a Stop ends the run)."""


@dataclass
class StepTrace:
    """One action of a task, as later prompts see it."""

    action: int
    name: str
    """"method.action"; "" when the step ran no action (none was chosen)."""
    objective: str
    observation: Observation
    summary: str
    step: int = 0
    """The step number shown to people (it restarts when a task is retried)."""
    status: str = ""
    """How the step ended, as its badge says: success, failed, rejected or stopped ("":
    by its observation)."""

    def ended(self) -> str:
        """How the step ended, as people read it beside its badge: succeeded, failed,
        rejected (by the user) or stopped (nobody approved it in time)."""
        status = self.status or ("success" if self.observation.success else "failed")
        return STEP_ENDINGS.get(status, status)

    def line(self, *, summary: bool = True) -> str:
        """`a2 web.search (success): summary`, for the model's prompts; without `summary`,
        pointing at the latest observation, which the prompt shows in full."""
        status = "success" if self.observation.success else "failed"
        told = self.summary if summary else "see the latest observation"
        return f"a{self.action} {self.name or 'no action'} ({status}): {told}"

    def told(self) -> str:
        """The step for people: `Step 2, web.search (succeeded): summary`."""
        status = self.ended()
        what = f"Step {self.step}, {self.name} ({status})" if self.name else f"Step {self.step}"
        return f"{what}: {self.summary}"


@dataclass
class TaskState:
    """A task as it runs: its steps, learnings and why it stopped."""

    number: int
    item: TaskItem
    attempt: int = 1
    actions: int = 0
    steps: list[StepTrace] = field(default_factory=list)
    stop_code: str = ""
    stop_reason: str = ""
    status: str = "pending"
    proposed: ActionSelection | None = None
    """The next action chosen with the last refinement decision, checked like Stage 1; the
    next step takes it instead of asking Stage 1 again."""
    missing: dict[str, str] = field(default_factory=dict)
    """Unavailable actions the model chose for this task, with the reason: not offered again,
    and named in the answer."""
    planned: ActionPlan | None = None
    """Actionplan mode: the action list the task plan carried for this (only) task, checked
    like an Actionplan answer when the task starts."""
    answer: str = ""
    """The answer to the user that refine (stopping with the criteria met) or the review
    (judging success) wrote in a round of one task; used only when the task ends in success."""
    failure: str = ""
    """Why the task did not succeed, in the host's words (see `failure_reason`)."""
    unfinished: str = ""
    """What the last refinement said when it asked to continue ("" before the first one, and
    once one stopped): the agent's own judgement that work is left. A task cut short while it
    is set is incomplete, whatever a review says (see `cut_short`)."""
    left: str = ""
    """What the host found still to do when it turned refine's "done" into "continue" (a
    document the request titles that does not exist): said instead of refine's words."""

    def next_action(self) -> int:
        """The next action number; numbering goes on across retries so labels never clash."""
        self.actions += 1
        return self.actions

    def facts(self) -> str:
        """Why the stored facts do not support success ("" when they do): some action must
        have succeeded, and the last one too."""
        if not self.steps:
            return "no action ran"
        last = self.steps[-1]
        if last.status == "rejected":  # the user said no: that is what happened, not a failure
            return f"the user rejected {last.name}"
        if last.status == "stopped":
            return f"{last.name} did not run: nobody approved it in time"
        if not any(step.observation.success for step in self.steps):
            return "no action succeeded"
        if not last.observation.success:
            return f"its last action ({last.name}) failed"
        return ""

    def cut_short(self) -> bool:
        """Whether the host stopped the task (its step limit, a budget) while the agent had
        judged it unfinished: its last refinement asked to continue."""
        return bool(self.unfinished) and self.stop_code in CUT_SHORT_CODES

    def unfinished_reason(self) -> str:
        """Why a task cut short is incomplete: what stopped it, and what the agent said was
        left."""
        said = " ".join(self.unfinished.split())
        said = said if len(said) <= 300 else said[:299] + "…"
        stopped = self.stop_reason.strip()
        stopped = stopped if stopped.endswith((".", "!", "?")) else f"{stopped}."
        if self.left:
            return f"{stopped} Still to do: {self.left}."
        return f"{stopped} Its last refinement said more was needed: “{said}”"

    def failure_reason(self, judged: str) -> str:
        """Why the task failed, from what happened: its last action's error when that
        failed, the host's own reason for stopping (a limit, a budget, a failed step), and
        only otherwise `judged`, the grounded review's."""
        last = self.steps[-1] if self.steps else None
        if last and last.name and not last.observation.success and last.observation.error:
            error = last.observation.error  # said of the action, unless it says which step
            return error if error.startswith((last.name, "Step ")) else f"{last.name}: {error}"
        if self.stop_code not in MODEL_STOP_CODES and self.stop_reason:
            return self.stop_reason
        return judged or self.stop_reason

    def criteria(self) -> str:
        """The success criteria as one line."""
        return "; ".join(self.item.successCriteria) or "(none stated)"

    def steps_text(self, *, latest_observation: bool = True) -> str:
        """One line per step, the newest STEPS_SHOWN of them (the others counted), fenced
        (summaries quote documents and the web); the latest observation in full (fenced too)
        unless the prompt shows it elsewhere. The newest step's line points at it instead of
        repeating its summary."""
        from workflows.engine.prompting.prompts import render_observation

        if not self.steps:
            return "(none yet)"
        shown = self.steps[-STEPS_SHOWN:]
        lines = [step.line(summary=step is not shown[-1]) for step in shown]
        text = untrusted("earlier steps", "\n".join(lines))
        if hidden := len(self.steps) - len(shown):
            text = f"({hidden} earlier step(s) not shown)\n{text}"
        if latest_observation:
            text += "\nLatest observation: " + render_observation(self.steps[-1].observation)
        return text
