"""The processes of bench/event_latency.py's production topology: the fake model server
(the demo model's policy, a little slow), Daphne and a worker with commit (and send) times
stamped on each event's JSON, and how the bench starts, waits for and stops them."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = 60.0
SCHEMA_KINDS = {
    "TaskPlan": "taskplan",
    "ActionSelection": "select",
    "ActionParameters": "parameters",
    "RefinementDecision": "refine",
    "TaskReview": "review",
}
"""Response-format schema name -> the demo model's call kind."""


def demo_answer(body: dict[str, Any]) -> Any:
    """The demo model's answer to one request, a little slow, the answer streamed word by word."""
    from tests.support.fake_openai import FakeReply
    from tests.support.prompt_facts import facts_from_prompt
    from workflows.engine.demo.policy import DemoLLM

    messages = body["messages"]
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    if name in SCHEMA_KINDS:
        kind = SCHEMA_KINDS[name]
        content = json.dumps(DemoLLM().decide(kind, facts_from_prompt(kind, messages)))
        return FakeReply(content=content, delay=0.15)
    answer = DemoLLM().final(facts_from_prompt("final", messages).results)
    return FakeReply(content=answer, delay=0.15, chunk_delay=0.01)


def serve_model() -> None:
    """Child: the fake model server; prints its URL, serves until stdin closes."""
    from tests.support.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer([demo_answer] * 1_000_000) as server:
        print(server.url, flush=True)
        sys.stdin.read()


def stamp_commits() -> None:
    """In an app process: note when each event is committed, and say it in its JSON, with
    the time it was rendered for the channel layer when it is broadcast."""
    import django

    django.setup()
    from workflows.events import broadcast
    from workflows.events.contract import Envelope
    from workflows.execution import recording

    committed: dict[tuple[int, int | None], float] = {}
    record, record_many, as_json = recording.record, recording.record_many, Envelope.as_json
    rendered = broadcast.rendered
    broadcasting = [False]

    def stamped_record(*args: Any, **kwargs: Any) -> Envelope | None:
        envelope = record(*args, **kwargs)
        if envelope is not None:
            committed[(envelope.workflow, envelope.seq)] = time.time()
        return envelope

    def stamped_record_many(*args: Any, **kwargs: Any) -> list[Envelope]:
        envelopes = record_many(*args, **kwargs)
        now = time.time()
        for envelope in envelopes:
            committed[(envelope.workflow, envelope.seq)] = now
        return envelopes

    def stamped_json(envelope: Envelope) -> dict[str, Any]:
        data = as_json(envelope)
        if (at := committed.get((envelope.workflow, envelope.seq))) is not None:
            data["committedAt"] = at
            if broadcasting[0]:
                data["sentAt"] = time.time()
        return data

    def stamped_rendered(envelope: Envelope) -> dict[str, Any]:
        broadcasting[0] = True  # rendered in the event loop's thread, one at a time
        try:
            return rendered(envelope)
        finally:
            broadcasting[0] = False

    recording.record = stamped_record  # type: ignore[assignment]
    recording.record_many = stamped_record_many  # type: ignore[assignment]
    Envelope.as_json = stamped_json  # type: ignore[method-assign]
    broadcast.rendered = stamped_rendered  # type: ignore[assignment]


def serve_app(port: int) -> None:
    """Child: Daphne serving the app, commit times stamped."""
    stamp_commits()
    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(["-b", "127.0.0.1", "-p", str(port), "poweron.asgi:application"])


def serve_worker() -> None:
    """Child: a `run_workers` process, commit times stamped."""
    stamp_commits()
    from django.core.management import call_command

    call_command("run_workers", "--executor-id", "bench-worker")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(check, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log.read_text()[-3000:]}")
        if check():
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start within {STARTUP_TIMEOUT:.0f} s")


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def stop(process: subprocess.Popen) -> None:
    """End a child this script started, by its own handle."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
