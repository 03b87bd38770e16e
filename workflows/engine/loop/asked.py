"""What a request asks that the host can settle without the model: a capability that is not
available here, and arithmetic.

A small model answers "Search the web for the current population of Oslo" from what it
remembers, and says 401 for 17×23. The host knows which actions are missing here (with why)
and can compute an expression exactly, so the answer says the first plainly, whichever way
the task plan went, and states the second as computed, beside whatever the model wrote.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from workflows.engine.loop.defaults import wants_freshness

_SYNONYMS = {
    "web": ("web", "internet", "online", "google", "bing", "duckduckgo"),
    "search": ("search", "look up", "lookup", "google"),
}
"""Other words a request uses for a method or an action's name."""


def name_words(name: str) -> list[str]:
    """The words of an action's name: web.search → web, search; document.generateReport →
    document, generate, report; github.* → github."""
    words: list[str] = []
    for part in name.replace("*", "").split("."):
        words += [w.lower() for w in re.findall(r"[A-Za-z][a-z0-9]*|[A-Z]+(?![a-z])", part)]
    return [w for w in words if w]


def _said(word: str, text: str) -> bool:
    """Whether the request uses the word (a synonym counts; a word's endings too)."""
    forms = _SYNONYMS.get(word, (word,))
    return any(re.search(rf"\b{re.escape(form)}", text) for form in forms)


def requested_unavailable(prompt: str, unavailable: Mapping[str, str]) -> dict[str, str]:
    """The missing actions (name → why) the request names — every word of the action's name
    ("search the web": web.search; a server's name: its tools) — or needs: current facts
    need a web search."""
    text = prompt.lower()
    found: dict[str, str] = {}
    for name, reason in unavailable.items():
        words = name_words(name)
        named = bool(words) and all(_said(word, text) for word in words)
        needed = name.endswith(".search") and name_words(name)[0] == "web"
        if named or (needed and wants_freshness(prompt)):
            found[name] = reason
    return found


# --- Arithmetic --------------------------------------------------------------------------

_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_EXPRESSION = re.compile(
    r"(?<![\w.])\(?\s*-?\d+(?:\.\d+)?\s*\)?(?:\s*(?:[-+*/^×÷·]|\*\*|\bx\b|\btimes\b|"
    r"\bplus\b|\bminus\b|\bdivided by\b)\s*\(?\s*-?\d+(?:\.\d+)?\s*\)?)+(?![\w.])"
)
_WORDS = {
    "×": "*",
    "·": "*",
    "÷": "/",
    "^": "**",
    "times": "*",
    "plus": "+",
    "minus": "-",
    "divided by": "/",
}


def evaluate(expression: str) -> float | None:
    """The value of an arithmetic expression of numbers, + - * / ** and parentheses (None for
    anything else, a division by zero, or a result too large to be meant)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return None

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
                raise ValueError("too large")
            return float(_OPERATORS[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](value(node.operand)))
        raise ValueError("not arithmetic")

    try:
        result = value(tree.body)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return result if abs(result) < 1e15 else None


def written(value: float) -> str:
    """A computed value as people write it: whole numbers without a decimal point, others to
    at most six decimals."""
    if value == int(value):
        return str(int(value))
    return f"{value:.6f}".rstrip("0").rstrip(".")


_ASKS = re.compile(
    r"\b(what(?:'s|’s| is| are| does)|calculate|compute|how (?:much|many)|evaluate|solve|"
    r"result|equals?|sum|product)\b|=\s*\??\s*$",
    re.IGNORECASE,
)
"""Words of a request that asks for a result."""
_NOT_ARITHMETIC = re.compile(r"^\d{4}-\d{2,4}$|^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}$")
"""A year range (2023-2024) or a date (12/06/2025), written like arithmetic."""


def calculations(prompt: str) -> list[tuple[str, str]]:
    """The arithmetic a request asks for, computed: (the expression as written, its value),
    for each expression with at least one operator in a request that asks for a result (a
    lone number, a date or a year range is none)."""
    found: list[tuple[str, str]] = []
    if not _ASKS.search(prompt):
        return found
    for match in _EXPRESSION.finditer(prompt):
        shown = " ".join(match.group(0).split())
        if _NOT_ARITHMETIC.match(shown):
            continue
        source = f" {shown.lower()} "
        for word, symbol in _WORDS.items():
            source = source.replace(word, symbol)
        source = re.sub(r"(?<=[\d)\s])x(?=[\s\d(])", "*", source)
        if not re.search(r"\d\s*(?:\*\*|[-+*/])\s*\(?\s*-?\d", source):
            continue
        result = evaluate(source.strip())
        if result is not None and (shown, written(result)) not in found:
            found.append((shown, written(result)))
    return found[:3]


def calculation_note(prompt: str) -> str:
    """The host's note for the model with the request's arithmetic computed ("" for none)."""
    done = calculations(prompt)
    return "; ".join(f"{expression} = {value}" for expression, value in done)


def unchecked_results(prompt: str, answer: str) -> list[tuple[str, str]]:
    """The request's computed results that the answer does not state (separators aside)."""
    digits = re.sub(r"(?<=\d)[,\u202f\u00a0 ](?=\d{3}\b)", "", answer)
    return [
        (expression, value)
        for expression, value in calculations(prompt)
        if not re.search(rf"(?<![\d.]){re.escape(value)}(?![\d]|\.\d)", digits)
    ]
