"""Prefix reuse on a local model server: each family of calls keeps the server slot that holds
its prefix, so the server evaluates only what changed since that family's last call.

llama.cpp's `llama-server` keeps the last prompt of each slot evaluated (its KV cache): a
request whose prompt starts like it evaluates only the rest (`cache_prompt`), and a request
may name its slot (`id_slot`). The engine lays every prompt out stable → volatile (the rules
and the catalog; the request; the task; then the steps, documents and the latest
observation; the instruction for the kind of call last), so the calls that plan, choose and
judge share a long prefix across the steps of a task and across its tasks. The other calls —
Stage 2's short prompt, the answer, an action's own calls — share nothing with them; on the
same slot each would replace that prefix, and the next refine would read it all again. With
two slots or more each family keeps its own (`FAMILIES`); with one, the server's own prompt
cache (`--cache-ram`, on by default in recent builds) is what brings a prefix back.

The server reports per call how much it reused: `usage.prompt_tokens_details.cached_tokens`
(and `timings.cache_n`, `timings.prompt_n`), read into `Usage.cached_tokens`; the rest of the
prompt was evaluated. A server that is not llama.cpp answers no `/props` and gets nothing of
this: its requests stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import openai
from openai import AsyncOpenAI

FAMILIES: Mapping[str, int] = {
    "taskplan": 0,
    "select": 0,
    "refine": 0,
    "review": 0,
    "actionplan": 0,
    "thought": 0,
    "parameters": 1,
    "final": 2,
}
"""Which calls share a prefix: 0, those whose system message is the rules and the catalog; 1,
Stage 2; 2, the answer to the user; any other kind (an action's own calls), 3."""
OTHER = 3
"""The family of a kind not in FAMILIES."""

_DETECTED: dict[str, int] = {}
"""Per server root, the slots its /props reported (0: none, or not a llama.cpp server)."""


def server_root(base_url: str) -> str:
    """The server's root for its own endpoints (/props, /slots): the OpenAI-compatible base
    URL without its trailing /v1."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def slot_for(kind: str, slots: int) -> int:
    """The slot a call of this kind goes to on a server with `slots` slots: one per family
    while there are enough, the families after the head sharing the last slot otherwise."""
    family = FAMILIES.get(kind, OTHER)
    return min(family, slots - 1)


def reuse_body(kind: str, slots: int) -> dict[str, Any]:
    """The request's extra body for prefix reuse on a server with `slots` slots ({} for none)."""
    if slots <= 0:
        return {}
    return {"id_slot": slot_for(kind, slots), "cache_prompt": True}


def slots_in(props: Any) -> int:
    """The slot count of a llama.cpp /props answer (0 when it is not one)."""
    if not isinstance(props, dict):
        return 0
    total = props.get("total_slots")
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else 0


async def server_slots(client: AsyncOpenAI, base_url: str) -> int:
    """How many slots the server has, asked once per process (llama.cpp's /props answers
    `total_slots`; any other server, or one that does not answer now, has none)."""
    root = server_root(base_url)
    found = _DETECTED.get(root)
    if found is None:
        quick = client.with_options(max_retries=0, timeout=5.0)
        try:
            props = await quick.get(f"{root}/props", cast_to=object)
        except (openai.APIError, ValueError):
            props = None
        found = _DETECTED[root] = slots_in(props)
    return found


def timings_of(response: Any) -> tuple[int, int] | None:
    """(evaluated, reused) prompt tokens from a llama.cpp response's `timings` (prompt_n,
    cache_n), or None when the server sent none."""
    extra = getattr(response, "model_extra", None) or {}
    timings = extra.get("timings") if isinstance(extra, dict) else None
    if not isinstance(timings, dict):
        return None
    evaluated, reused = timings.get("prompt_n"), timings.get("cache_n")
    if not isinstance(evaluated, int) or not isinstance(reused, int):
        return None
    return evaluated, reused
