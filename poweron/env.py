"""Readers of the environment the settings are made of: booleans, bounded numbers, lists."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar, overload


def env_bool(name: str, default: bool) -> bool:
    """Read a yes/no variable: 1/true/yes/on are true."""
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int, *, low: int | None = None, high: int | None = None) -> int:
    """Read an integer variable, naming it when it is not a number or not within bounds."""
    return _env_number(name, default, int, "an integer", low, high)


@overload
def env_float(
    name: str, default: float, *, low: float | None = None, high: float | None = None
) -> float: ...
@overload
def env_float(
    name: str, default: None, *, low: float | None = None, high: float | None = None
) -> float | None: ...
def env_float(
    name: str, default: float | None, *, low: float | None = None, high: float | None = None
) -> float | None:
    """Read a number variable (e.g. seconds), naming it when it is not a number or not within
    bounds."""
    return _env_number(name, default, float, "a number", low, high)


_Default = TypeVar("_Default")
_Number = TypeVar("_Number", int, float)


def _env_number(
    name: str,
    default: _Default,
    parse: Callable[[str], _Number],
    what: str,
    low: float | None = None,
    high: float | None = None,
) -> _Number | _Default:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = parse(value)
    except ValueError as error:
        raise ValueError(f"{name} must be {what}, got {value!r}") from error
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"at least {low:g}" if high is None else f"between {low:g} and {high:g}"
        raise ValueError(f"{name} must be {bounds}, got {value!r}")
    return number


def env_list(name: str, default: str) -> list[str]:
    """Read a comma-separated variable."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
