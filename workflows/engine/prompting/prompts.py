"""Prompt builders. Templates live in prompts/*.txt.

Prompts are laid out for providers' prefix caches: the system message (the rules, then the
task's catalog for the calls that choose actions) is byte-identical across the calls of a run
and across runs; the user message goes from what changes least (the request, the history,
the task) to what changes every step (steps, documents, the latest observation), and the
instruction for this kind of call ("## Now") comes last, where a small model reads it best.
For a provider with a prompt cache, `cache_first` moves that instruction to the end of the
system message: it is the same for every call of its kind, so the stable prefix a cache
can hold grows by it (a provider caches from 1,024 tokens on). Stage 2 gets no system
message at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel

from workflows.engine.prompting.history import render_history
from workflows.engine.records.protocols import (
    DocumentRef,
    Message,
    Tool,
    catalog_line,
    json_schema,
    untrusted,
)
from workflows.engine.records.schemas import (
    FORBIDDEN_PARAMETER_NAMES,
    Observation,
    ParameterField,
    ParametersSchema,
)
from workflows.engine.records.state import Caps, ConnectionInfo, HistoryEntry

TEMPLATES = Path(__file__).with_name("prompts")


@cache
def template(name: str) -> Template:
    """A prompt template from prompts/<name>.txt."""
    return Template((TEMPLATES / f"{name}.txt").read_text(encoding="utf-8").strip())


def system_message(
    tools: Sequence[Tool] | None = None,
    unavailable: Mapping[str, str] | None = None,
    *,
    purposes: bool = False,
) -> Message:
    """The rules, and the catalog when the call chooses actions (with `purposes`, what each
    action is for), with the actions that are unavailable here and why (stable: cacheable)."""
    text = template("system").substitute()
    if tools is not None:
        catalog = render_catalog(tools, purposes=purposes)
        text += "\n\n## Catalog\n" + catalog + render_unavailable(unavailable or {})
    return {"role": "system", "content": text}


def build(
    name: str,
    *,
    tools: Sequence[Tool] | None = None,
    unavailable: Mapping[str, str] | None = None,
    system: bool = True,
    purposes: bool = False,
    **values: Any,
) -> list[Message]:
    """The system message (with `tools` as the catalog, `unavailable` after it) + the filled
    template as the user message; `system=False` sends the user message alone."""
    text = template(name).substitute({k: str(v) for k, v in values.items()})
    user: Message = {"role": "user", "content": text}
    head = system_message(tools, unavailable, purposes=purposes)
    return [head, user] if system else [user]


NOW = "\n\n## Now\n"
"""Where a prompt's instruction for its kind of call starts."""
ANSWER_NOW = '\n\n## Now\nAnswer as the system message says under "## Now".'


def cache_first(messages: Sequence[Message]) -> list[Message]:
    """The prompt with its "## Now" instruction moved from the end of the user message to the
    end of the system message (a short pointer stays in its place), so everything before the
    request is the same across the calls of a kind and across runs. Prompts without a system
    message or an instruction are returned as they are."""
    out, index = _instructed(messages)
    if index:
        data, _, instruction = out[index]["content"].partition(NOW)
        out[0]["content"] += NOW + instruction
        out[index]["content"] = data + ANSWER_NOW
    return out


ANSWER_FORMAT = "\n\n## Answer format\n"
"""Where a narrow layout's system message says how the answer of its kind is written."""
_FORMAT_STARTS = "Answer with one JSON object"
FORMAT_POINTER = 'Write the answer as "## Answer format" in the system message says.'


def format_first(messages: Sequence[Message]) -> list[Message]:
    """A local server's prompt laid out stable → volatile, for its prefix cache: the part of
    "## Now" that says how the answer is written (the same for every call of a kind, hundreds
    of tokens a server would otherwise evaluate at every call) moves to the end of the system
    message under "## Answer format", before the request and the steps; what to do now stays
    last in the user message, where a small model reads it best, with a pointer to the format.
    Prompts without a system message or such an instruction are returned as they are."""
    out, index = _instructed(messages)
    if index:
        data, _, instruction = out[index]["content"].partition(NOW)
        task, starts, form = instruction.partition(_FORMAT_STARTS)
        if starts:
            out[0]["content"] += ANSWER_FORMAT + starts + form.rstrip()
            now = f"{task.rstrip()}\n{FORMAT_POINTER}".lstrip("\n")
            out[index]["content"] = f"{data}{NOW}{now}"
    return out


def _instructed(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """A copy of the messages, and the index of the user message holding the "## Now"
    instruction (0 when the prompt has no system message or no such message). A conversation
    that goes on after it (a catalog search's answer) keeps its earlier messages as sent."""
    out: list[Message] = [{"role": m["role"], "content": m["content"]} for m in messages]
    if len(out) < 2 or out[0]["role"] != "system":
        return out, 0
    found = [i for i, m in enumerate(out) if i and m["role"] == "user" and NOW in m["content"]]
    return out, found[-1] if found else 0


def render_unavailable(unavailable: Mapping[str, str]) -> str:
    """The actions missing here, each with its reason ("" when none is): the model learns what
    cannot be done instead of guessing around it; choosing one ends the task with the reason."""
    if not unavailable:
        return ""
    lines = [f"- {name}: {' '.join(reason.split())[:200]}" for name, reason in unavailable.items()]
    head = "\nUnavailable here (choosing one stops the task and tells the user why):"
    return "\n".join([head, *lines])


def selection_format(*, hosted: bool = False) -> str:
    """How an action is written, for Stage 1 and for refine's next action. A hosted model is
    also told which parameters to leave to their defaults, and that doing so saves a call (a
    small local model's prompt stays as it was measured)."""
    return template("selection").substitute(
        forbidden=", ".join(sorted(FORBIDDEN_PARAMETER_NAMES)),
        needs_value=(
            "whose value no default gives (one the action needs, or one the request fixes, "
            "such as a title the user named)"
            if hosted
            else "that needs a value"
        ),
        no_call=", and the action runs on them without another call" if hosted else "",
    )


def plan_format(*, round: int, task: int, first_action: int) -> str:
    """How the actions of an upfront plan are written, for Actionplan's call and for the task
    plan that carries task 1's plan."""
    return template("plan_format").substitute(
        forbidden=", ".join(sorted(FORBIDDEN_PARAMETER_NAMES)),
        round=round,
        task=task,
        first_action=first_action,
    )


def correction(error: str, valid: str = "") -> Message:
    """The corrective follow-up after invalid output, with the valid values when the answer
    has fixed choices."""
    text = template("correction").substitute(error=error[:1_500], valid=valid_line(valid))
    return {"role": "user", "content": text.replace("\n\n", "\n")}


def unfinished_correction(error: str, valid: str = "") -> Message:
    """The follow-up after an answer that was cut off, looped, timed out or held no JSON: a
    shorter request with the valid values, without the broken answer (it would be continued)."""
    text = template("unfinished").substitute(error=error[:500], valid=valid_line(valid))
    return {"role": "user", "content": text.strip()}


def valid_line(valid: str) -> str:
    """The valid values of an answer's fixed choices, as one line ("" when there are none)."""
    return f"Valid values: {valid[:1_500]}" if valid else ""


# --- Sections ------------------------------------------------------------------------------


def render_catalog(tools: Sequence[Tool], *, purposes: bool = False) -> str:
    """The tiny catalog: one `method.action(param,names)` line per allowed action; with
    `purposes` (a small local model, which otherwise picks actions by their names), what
    each is for in a few words. Tools from other sources (MCP servers) follow with their own
    short descriptions, fenced as untrusted: a server's words are data, never instructions."""
    own = [
        f"- {catalog_line(tool)}{tool.catalog_note}"  # catalog.search's count
        + (f": {tool.purpose}" if purposes and tool.purpose else "")
        for tool in tools
        if tool.untrusted_summary is None
    ]
    external = [
        f"- {catalog_line(tool)}: {tool.untrusted_summary}"
        for tool in tools
        if tool.untrusted_summary is not None
    ]
    if external:
        own.append("External tools (MCP servers; the descriptions are the servers' own words):")
        own.append(untrusted("MCP servers", "\n".join(external)))
    return "\n".join(own) or "(no actions allowed)"


SENT_WITH_MESSAGE = "sent with this message"
"""How the documents index marks the files the user sent with the message being answered."""


def render_documents(
    index: Sequence[DocumentRef], *, current_round: int = 0, caps: Caps | None = None
) -> str:
    """The documents that matter now, as docList labels with their docItem references: this
    round's newest labels, the newest documents of earlier rounds; the rest counted, not listed
    (references to them still work). A long workflow's or a long task's prompt stays the same
    size."""
    if not index:
        return "(none)"
    caps = caps or Caps()
    earlier = [ref for ref in index if ref.round != current_round]
    current = [ref for ref in index if ref.round == current_round]
    listed = set(
        list(dict.fromkeys(ref.label for ref in current))[-caps.documents_current_labels :]
    )
    shown = [*earlier[-caps.documents_recent :], *(r for r in current if r.label in listed)]
    hidden = earlier[: -caps.documents_recent] if len(earlier) > caps.documents_recent else []
    hidden_now = [ref for ref in current if ref.label not in listed]
    lines: list[str] = []
    for refs, which in (
        (hidden, "older document(s)"),
        (hidden_now, "earlier result(s) of this round"),
    ):
        if refs:
            labels = len({ref.label for ref in refs})
            lines.append(
                f"- (+{len(refs)} {which} under {labels} label(s), not listed; "
                "docList:<label> and docItem:<id> references to them still work)"
            )
    totals = Counter(ref.label for ref in index)
    groups: dict[str, list[DocumentRef]] = {}
    for ref in shown:
        groups.setdefault(ref.label, []).append(ref)
    sent = f"round{current_round}_upload"  # services.upload_label: this message's files
    for label, docs in groups.items():
        with_message = f", {SENT_WITH_MESSAGE}" if label == sent else ""
        lines.append(f"- docList:{label} ({totals[label]} document(s){with_message})")
        lines.extend(
            f"  - docItem:{d.id}:{d.name} ({d.mime}, {d.size} bytes)"
            for d in docs[: caps.documents_per_label]
        )
        if len(docs) > caps.documents_per_label:
            lines.append(f"  - … {len(docs) - caps.documents_per_label} more in this list")
    return "\n".join(lines)


def render_connections(connections: Sequence[ConnectionInfo]) -> str:
    """Connection labels and kinds, never secrets."""
    return "\n".join(f"- {c.label} ({c.kind})" for c in connections) or "(none)"


def render_list(items: Sequence[str], empty: str = "(none)") -> str:
    """A bullet list."""
    return "\n".join(f"- {item}" for item in items) or empty


def render_observation(observation: Observation) -> str:
    """An observation for a prompt, fenced: its snippets come from documents or the web."""
    return untrusted("action results", observation.model_dump_json(exclude_defaults=True))


def render_parameters_schema(schema: ParametersSchema) -> str:
    """One line per field: `- name (type, required): description`."""
    lines = []
    for f in schema.fields:
        need = "required" if f.required else "optional"
        lines.append(
            f"- {f.name} ({f.type}, {need})" + (f": {f.description}" if f.description else "")
        )
    return "\n".join(lines) or "(no parameters)"


# --- Stage 2 schema reconciliation ------------------------------------------------------------


def _type_of(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "enum[" + "|".join(str(v) for v in prop["enum"]) + "]"
    kind = prop.get("type")
    if kind is None and "anyOf" in prop:
        kinds = [_type_of(option) for option in prop["anyOf"] if option.get("type") != "null"]
        return kinds[0] if len(kinds) == 1 else "|".join(kinds) or "string"
    if kind == "array":
        return f"array of {_type_of(prop.get('items', {}))}"
    if kind == "integer":
        return "number"
    return str(kind or "string")


def reconcile_schema(requested: ParametersSchema, model: type[BaseModel]) -> ParametersSchema:
    """Stage 1's schema made true to the action: unknown fields dropped, required ones added."""
    schema = json_schema(model)
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    fields: list[ParameterField] = []
    for f in requested.fields:
        if f.name in props:
            prop = props[f.name]
            fields.append(
                ParameterField(
                    name=f.name,
                    type=_type_of(prop),
                    required=f.name in required,
                    description=f.description or prop.get("description", ""),
                )
            )
    named = {f.name for f in fields}
    for name in props:
        if name in required and name not in named:
            prop = props[name]
            fields.append(
                ParameterField(
                    name=name,
                    type=_type_of(prop),
                    required=True,
                    description=prop.get("description", ""),
                )
            )
    return ParametersSchema(fields=fields)


# --- Prompt builders ------------------------------------------------------------------------


def fit_history(
    build_with: Any, history: Sequence[HistoryEntry], round: int, *, history_chars: int, limit: int
) -> list[Message]:
    """Build a prompt, cutting the history until the prompt fits in `limit` characters."""
    budget = history_chars
    while True:
        messages: list[Message] = build_with(render_history(history, round, max_chars=budget))
        size = sum(len(m["content"]) for m in messages)
        if size <= limit or budget <= 200:
            return messages
        budget = max(200, budget - (size - limit) - 100)


def parameters_prompt(
    *, action: str, objective: str, context: str, schema: ParametersSchema
) -> list[Message]:
    """Stage 2: only the selected action, its objective, the context and the schema."""
    return build(
        "parameters",
        system=False,
        action=action,
        objective=objective,
        context=context or "(none)",
        schema=render_parameters_schema(schema),
    )
