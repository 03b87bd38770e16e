"""Validation problems in plain words, for people.

`protocols.describe_error` says what pydantic found as `field.path: message`, which the model's
corrective retry reads well. People read these instead: "in action 1, the connection must be
empty" rather than "actions.0.requiredConnection: Input should be None".
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NAMES = {
    "requiredConnection": "connection",
    "requiredInputDocuments": "input documents",
    "actionObjective": "objective",
    "parametersSchema": "parameter list",
    "parametersContext": "parameter context",
    "current_thinking": "thinking",
    "next_thought_needed": "choice of another thought",
    "sub_steps": "sub-steps",
    "successCriteria": "success criteria",
    "taskType": "task type",
    "resultLabel": "result label",
    "firstAction": "first action",
    "next": "next action",
    "metCriteria": "criteria met",
    "criteriaMet": "criteria met",
}
"""Keys whose words alone would mislead or read oddly."""
_ITEMS = {
    "actions": "action",
    "tasks": "task",
    "planning": "plan step",
    "sub_steps": "sub-step",
    "fields": "parameter",
    "successCriteria": "criterion",
    "requiredInputDocuments": "input document",
}
_TYPES = {
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be a set of named values",
    "model_type": "must be a set of named values",
    "model_attributes_type": "must be a set of named values",
    "none_required": "must be empty",
    "missing": "is missing",
    "extra_forbidden": "is not expected",
    "json_invalid": "is not valid JSON",
    "json_type": "is not valid JSON",
    "url_parsing": "must be a web address",
    "url_scheme": "must be an http or https address",
    "string_pattern_mismatch": "is not written in the expected form",
}


def explain_error(error: Exception, *, parameters: bool = False) -> str:
    """A validation problem as clauses for people, joined by "; " and starting in lower case
    so that it can follow a colon (`parameters`: the fields are an action's parameters).
    Anything but a pydantic ValidationError is said as it is."""
    if not isinstance(error, ValidationError):
        return str(getattr(error, "told", "") or error)  # a rule's own words (loop.Rejected)
    clauses = [_clause(item, parameters) for item in error.errors(include_url=False)]
    return "; ".join(dict.fromkeys(clauses))


def _clause(item: Any, parameters: bool) -> str:
    where, subject = _place(list(item["loc"]), parameters)
    problem = _problem(item)
    if item["type"] == "extra_forbidden" and item["loc"]:  # a key it does not know: its name
        subject = f"the field {item['loc'][-1]}"
    text = f"{subject} {problem}" if subject else problem  # a rule of the whole: its words
    return f"in {where}, {text}" if where else text


def _place(loc: list[Any], parameters: bool) -> tuple[str, str]:
    """(where, subject): the items the problem is in ("action 1") and what it is about ("the
    connection"), from a pydantic location."""
    parts = [p for p in loc if not (isinstance(p, str) and ("[" in p or p.startswith("function")))]
    places: list[str] = []
    subject = ""
    index = 0
    while index < len(parts):
        part = parts[index]
        following = parts[index + 1] if index + 1 < len(parts) else None
        if isinstance(part, int):
            places.append(f"item {part + 1}")
        elif isinstance(following, int):
            places.append(f"{_ITEMS.get(part, _words(part))} {following + 1}")
            index += 1
        elif part == "parameters" and isinstance(following, str):
            subject = f"the parameter {following}"
            index += 1
        elif following is None and parameters and not places:
            subject = f"the parameter {part}"
        elif following is None:
            subject = f"the {_words(part)}"
        else:
            places.append(f"the {_words(part)}")
        index += 1
    if subject == "" and places and places[-1].startswith("the "):
        subject = places.pop()
    return ", ".join(places), subject


def _words(key: str) -> str:
    """A key as words: "requiredConnection" -> "connection", "sub_steps" -> "sub-steps"."""
    if key in _NAMES:
        return _NAMES[key]
    return _CAMEL.sub(" ", key).replace("_", " ").lower()


def _problem(item: Any) -> str:
    """What is wrong, in words."""
    kind = item["type"]
    context = item.get("ctx") or {}
    if kind in _TYPES:
        return _TYPES[kind]
    if kind in ("literal_error", "enum"):
        expected = str(context.get("expected", ""))
        if expected and len(expected) <= 120:
            return f"must be {expected}"
        return "is not one of the allowed values"
    if kind == "string_too_short":
        least = context.get("min_length", 1)
        return "must not be empty" if least == 1 else f"needs at least {least} characters"
    if kind == "string_too_long":
        return f"is too long (at most {context.get('max_length')} characters)"
    if kind == "too_short":
        least = context.get("min_length", 1)
        return "must not be empty" if least == 1 else f"needs at least {least} items"
    if kind == "too_long":
        return f"has too many items (at most {context.get('max_length')})"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {
            "greater_than_equal": "at least",
            "greater_than": "more than",
            "less_than_equal": "at most",
            "less_than": "less than",
        }
        bound = next(iter(context.values()), "")
        return f"must be {words[kind]} {bound}"
    message = str(item["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return message.replace("Input should be", "must be").rstrip(".")
