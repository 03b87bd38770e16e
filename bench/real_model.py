"""A small-model benchmark: six fixed tasks in React mode against a real OpenAI-compatible
model server, each outcome checked against facts the suite knows.

The engine runs as in the app (the real `openai` client, the real tools, documents in memory);
web pages come from the tests' local test site, and no search provider is configured, so web
search is unavailable on purpose. Prints, per task, whether it succeeded, its final status,
model calls, tokens and seconds; then the success rate and the issue's goals.

    .venv/bin/python bench/real_model.py --base-url http://127.0.0.1:8081/v1 \\
        --model qwen2.5-coder-0.5b [--timeout 120] [--timeout-per-1k 30] [--only arithmetic]
        [--small-model NAME --small-base-url URL]  # Stage 2 and the review on a small model

Per task and call kind it also prints the prompt tokens the server reused from its cache and
those it evaluated (llama.cpp reports both; the product sends each family of calls to its own
slot, `--slots`). With `--before REF` each task runs first as the commit REF had it (its own
bench, from a snapshot of that commit, in a subprocess), then as it is now, side by side on
the same server and machine; `--repeat N` runs the suite N times.

Without a server it prints how to start one (llama.cpp's llama-server) and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.website import TestWebsite  # noqa: E402
from workflows.engine.loop.claim_text import figures_in  # noqa: E402
from workflows.engine.loop.controls import AutoControls  # noqa: E402
from workflows.engine.loop.round import run_round  # noqa: E402
from workflows.engine.model.llm import OpenAICompatibleLLM  # noqa: E402
from workflows.engine.model.staged import StagedLLM  # noqa: E402
from workflows.engine.records.events import ErrorEvent, Event, MessageEvent, RoundEvent, UsageEvent  # noqa: E402
from workflows.engine.records.protocols import LLM  # noqa: E402
from workflows.engine.records.state import Budgets, RoundState  # noqa: E402
from workflows.engine.testing import MemoryStore  # noqa: E402
from workflows.tools.registry import ToolRegistry  # noqa: E402

HOW_TO_START = """\
No model server given. Start a small model with llama.cpp's llama-server (see the README's
"Running on a small local model"), for example:

    llama-server -m qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --alias qwen2.5-coder-0.5b \\
        --host 127.0.0.1 --port 8081 -c 8192 -np 1 -t 1

then run:

    .venv/bin/python bench/real_model.py --base-url http://127.0.0.1:8081/v1 \\
        --model qwen2.5-coder-0.5b --timeout 120 --timeout-per-1k 30
"""

NOTES = """Project Aurora status notes
The Riga office now has 14 engineers.
The new battery lab opened on 3 March.
The budget for 2025 is 2.4 million euros.
The next review meeting is on 12 June.
"""
NOTE_FACTS = ("14", "2.4", "3 March", "12 June")
UNAVAILABLE = re.compile(
    r"not available|unavailable|no search|cannot (?:search|browse|access)|can't (?:search|browse)"
    r"|unable to (?:search|browse|access)",
    re.IGNORECASE,
)


@dataclass
class Outcome:
    """What one task's round left behind, for its check."""

    answer: str
    status: str
    produced: dict[str, str]
    """Produced document name → text (binary ones empty)."""
    ran: list[str]
    """The actions that succeeded, in order."""


@dataclass
class Task:
    """One task of the suite: the request, the files uploaded with it, the facts to check."""

    name: str
    prompt: str
    check: Callable[[Outcome], bool]
    files: dict[str, str] = field(default_factory=dict)


def suite(site: TestWebsite) -> list[Task]:
    """The six tasks, with the facts each outcome is checked against."""
    links = f"Pages to read:\n{site.page_url('/a')}\n"

    def mentions(text: str, facts: tuple[str, ...], at_least: int = 1) -> bool:
        return sum(fact.lower() in text.lower() for fact in facts) >= at_least

    return [
        Task(
            "report",
            "Write a short report of the attached notes.",
            lambda o: (
                bool(o.produced)
                and mentions(o.answer + " ".join(o.produced.values()), NOTE_FACTS, 2)
            ),
            {"notes.txt": NOTES},
        ),
        Task("arithmetic", "What is 17*23?", lambda o: "391" in o.answer),
        Task(
            "no_tool",
            "What is the capital of France? Answer in one sentence.",
            lambda o: "paris" in o.answer.lower() and not o.ran,
        ),
        Task(
            "crawl",
            "Read the web page listed in the attached file: by how many percent did solar "
            "power capacity in Northern Europe grow in 2023?",
            lambda o: "40" in o.answer and "web.crawl" in o.ran,
            {"links.txt": links},
        ),
        Task(
            "missing_capability",
            "Search the web for the current population of Oslo.",
            lambda o: bool(UNAVAILABLE.search(o.answer)) and not o.produced,
        ),
        Task(
            "two_steps",
            "Extract the text of the attached notes, then write a report titled "
            "'Aurora summary' from the extracted text.",
            lambda o: (
                "document.generateReport" in o.ran
                and mentions(" ".join(o.produced.values()), NOTE_FACTS, 2)
            ),
            {"notes.txt": NOTES},
        ),
    ]


@dataclass
class Result:
    task: str
    ok: bool
    status: str
    calls: int
    tokens: int
    seconds: float
    rejected: int
    """Answers rejected (validation or rule) in the round."""
    repeated: int
    """Steps where the answer after the corrective retry was rejected for the same reason."""
    answer: str
    prompt: int = 0
    """Prompt tokens of the round's calls."""
    reused: int = 0
    """Of those, the ones the server reused from its cache (the rest it evaluated)."""
    kinds: dict[str, list[int]] = field(default_factory=dict)
    """Per call kind: [calls, prompt tokens, reused, completion tokens]."""
    produced: dict[str, str] = field(default_factory=dict)
    """The documents the round produced (name → text), for the closing note's checks."""


def same_reason(first: str, second: str) -> bool:
    """Two rejections for the same reason: the same problem text after the call's name."""
    return first.split(": ", 1)[-1][:120] == second.split(": ", 1)[-1][:120]


async def run_task(task: Task, llm: LLM, settings: dict, args: argparse.Namespace) -> Result:
    store = MemoryStore()
    for name, text in task.files.items():
        store.add(name, "text/plain", text.encode(), label="round1_upload")
    state = RoundState(
        round=1,
        prompt=task.prompt,
        max_steps=args.max_steps,
        budgets=Budgets(tokens=60_000, seconds=args.seconds),
    )
    started = time.perf_counter()
    events: list[Event] = [
        event
        async for event in run_round(
            state, llm=llm, tools=ToolRegistry(settings), store=store, controls=AutoControls()
        )
    ]
    seconds = time.perf_counter() - started
    if args.verbose:
        for event in events:
            if event.type not in ("delta", "usage"):
                print("   ", event.model_dump_json(exclude_defaults=True)[:400])
    usage = [e for e in events if isinstance(e, UsageEvent)]
    errors = [e for e in events if isinstance(e, ErrorEvent) and e.kind != "tool"]
    repeated = sum(
        1
        for first, second in zip(errors, errors[1:], strict=False)
        if first.retrying and not second.retrying and same_reason(first.message, second.message)
    )
    answers = [e for e in events if isinstance(e, MessageEvent) and e.role == "assistant"]
    answer = answers[-1].content if answers else ""
    produced = {}
    for ref in store.index():
        if ref.source != "uploaded":
            data = await store.read(ref)
            text = data.decode("utf-8", "replace") if ref.mime.startswith("text/") else ""
            produced[ref.name] = text
    ran = [
        e.method
        for e in events
        if getattr(e, "type", "") == "act"
        and any(
            getattr(o, "type", "") == "observe" and o.action == e.action and o.observation.success
            for o in events
        )
    ]
    final = [e for e in events if isinstance(e, RoundEvent)][-1]
    outcome = Outcome(answer=answer, status=final.status, produced=produced, ran=ran)
    kinds: dict[str, list[int]] = {}
    for u in usage:
        row = kinds.setdefault(u.kind, [0, 0, 0, 0])
        for i, value in enumerate((1, u.promptTokens, u.cachedTokens, u.completionTokens)):
            row[i] += value
    return Result(
        task=task.name,
        ok=task.check(outcome),
        status=final.status,
        calls=len(usage),
        tokens=sum(u.promptTokens + u.completionTokens for u in usage),
        seconds=seconds,
        rejected=len(errors),
        repeated=repeated,
        answer=answer,
        prompt=sum(u.promptTokens for u in usage),
        reused=sum(u.cachedTokens for u in usage),
        kinds=kinds,
        produced=produced,
    )


HOST_LINES = re.compile(
    r"(?m)^(?:_.*_|\s*- (?:Task|Step) \d+.*|I stopped (?:early|here): .*|"
    r"\*\*Not (?:finished|everything worked|available here|read):\*\*.*|"
    r"The answer could not be written: .*|I could not finish.*)$"
)
"""Lines the host writes, not the model: a document's italic metadata (`_TEXT, 1 section(s)_`),
the list of what each task and step did, and the host's own lines above an answer."""


def model_text(text: str) -> str:
    """A document or answer without the host's lines and its list of sources (`## Sources`,
    which the host appends): what the model wrote."""
    return HOST_LINES.sub("", text.split("\n## Sources\n", 1)[0])


def figure_audit(results: list[Result]) -> None:
    """The faithfulness check on the suite's reports and answers: every figure the model wrote
    (headings and tables too), judged against the notes the tasks attach, and whether the
    product flagged it (taken out of a report, or named in an answer's note)."""
    truth = {v for _, found in figures_in(NOTES) for v in found}
    rows: list[tuple[str, str, bool, bool]] = []  # task, figure, invented, flagged
    for r in results:
        if r.task not in ("report", "two_steps"):
            continue
        texts = [t for name, t in r.produced.items() if name.endswith(".md")]
        for text in [model_text(t) for t in [*texts, r.answer]]:
            body, _, tail = text.partition("\n---\n\n_Checked against the sources")
            body, _, note = body.partition("\n\n> Checked against the sources")
            flagged_here = {w for w, _ in figures_in(tail.partition("Taken out")[2])}
            flagged_here |= set(re.findall(r"“([^”]+)”", note.partition("\n")[0]))
            for written, values in figures_in(tail.partition("Taken out")[2] + "\n" + body):
                rows.append((r.task, written, not values & truth, written in flagged_here))
    if not rows:
        return
    invented = [row for row in rows if row[2]]
    true = [row for row in rows if not row[2]]
    print(
        f"\nFaithfulness check on the report tasks: {sum(r[3] for r in invented)} of "
        f"{len(invented)} invented figures flagged, {sum(r[3] for r in true)} of {len(true)} "
        "true figures flagged"
    )
    for task, written, bad, flagged in rows:
        print(f"  {task:<12}{written:<16}{'invented' if bad else 'true':<10}{flagged}")


def report(model: str, results: list[Result]) -> None:
    print(f"\nModel: {model}")
    print(
        f"{'task':<20}{'ok':<5}{'status':<11}{'calls':>6}{'tokens':>8}{'prompt':>8}"
        f"{'reused':>8}{'evaluated':>10}{'seconds':>9}{'rej':>5}"
    )
    for r in results:
        mark = "yes" if r.ok else "no"
        print(
            f"{r.task:<20}{mark:<5}{r.status:<11}{r.calls:>6}{r.tokens:>8}{r.prompt:>8}"
            f"{r.reused:>8}{r.prompt - r.reused:>10}{r.seconds:>9.1f}{r.rejected:>5}"
        )
    solved = sum(r.ok for r in results)
    clear = all(r.status in ("completed", "failed") for r in results)
    prompt, reused = sum(r.prompt for r in results), sum(r.reused for r in results)
    print(
        f"\nSuccess: {solved}/{len(results)}; model calls {sum(r.calls for r in results)}, "
        f"tokens {sum(r.tokens for r in results)}, "
        f"seconds {sum(r.seconds for r in results):.0f} "
        f"(per task: mean {sum(r.seconds for r in results) / max(1, len(results)):.0f}, "
        f"median {statistics.median([r.seconds for r in results] or [0]):.0f})"
    )
    print(
        f"Prompt tokens {prompt}: reused from the server's cache {reused} "
        f"({reused / max(1, prompt):.0%}), evaluated {prompt - reused}"
    )
    kinds: dict[str, list[int]] = {}
    for r in results:
        for kind, row in r.kinds.items():
            kinds[kind] = [a + b for a, b in zip(kinds.get(kind, [0, 0, 0, 0]), row, strict=True)]
    print(f"{'call kind':<26}{'calls':>6}{'prompt':>8}{'reused':>8}{'evaluated':>10}{'output':>8}")
    for kind, (calls, p, c, out) in sorted(kinds.items(), key=lambda item: -item[1][1]):
        print(f"{kind:<26}{calls:>6}{p:>8}{c:>8}{p - c:>10}{out:>8}")
    figure_audit(results)
    print(f"Every run ended with a clear final status: {'yes' if clear else 'no'}")
    print(
        "Replies rejected twice for the same reason: "
        f"{sum(r.repeated for r in results)} (answers rejected in all: "
        f"{sum(r.rejected for r in results)})"
    )


def model_of(args: argparse.Namespace) -> OpenAICompatibleLLM | StagedLLM:
    """The model server's client; with --small-model, the product's per-stage routing: the
    small model (on --small-base-url, else the same server) answers Stage 2 and the review."""
    options = {
        "api_key": args.api_key,
        "timeout": args.timeout,
        "timeout_per_1k_tokens": args.timeout_per_1k,
        "max_retries": 1,
    }
    slots = 0 if args.slots == "off" else "auto" if args.slots == "auto" else int(args.slots)
    main = OpenAICompatibleLLM(base_url=args.base_url, model=args.model, slots=slots, **options)
    if not args.small_model:
        return main
    small_url = args.small_base_url or args.base_url
    small = OpenAICompatibleLLM(base_url=small_url, model=args.small_model, slots=slots, **options)
    return StagedLLM(main, small)


def snapshot(ref: str) -> Path:
    """The repository as the commit `ref` had it, unpacked once under the temporary directory
    (git archive: the working tree and the repository stay as they are); a directory given as
    `ref` is taken as such a copy."""
    if Path(ref).is_dir():
        return Path(ref)
    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    target = Path(tempfile.gettempdir()) / f"poweron-{commit}"
    if not (target / "bench" / "real_model.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", commit], cwd=root, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def run_before(tree: Path, task: str, args: argparse.Namespace) -> Result | None:
    """One task as the snapshot's own bench runs it (a subprocess, its code only)."""
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    command = [
        sys.executable,
        str(tree / "bench" / "real_model.py"),
        *("--base-url", args.base_url, "--model", args.model, "--api-key", args.api_key),
        *("--timeout", str(args.timeout), "--timeout-per-1k", str(args.timeout_per_1k)),
        *("--max-steps", str(args.max_steps), "--seconds", str(args.seconds)),
        *("--only", task, "--json", str(out)),
    ]
    if args.small_model:
        command += ["--small-model", args.small_model]
        command += ["--small-base-url", args.small_base_url or args.base_url]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True)
    try:
        rows = json.loads(out.read_text() or "[]")
    except ValueError:
        rows = []
    out.unlink(missing_ok=True)
    if not rows:
        print(f"   before: no result ({done.stderr.strip()[-300:]})", flush=True)
        return None
    known = {k: v for k, v in rows[0].items() if k in Result.__dataclass_fields__}
    return Result(**known)


def side_by_side(ref: str, before: list[Result], after: list[Result]) -> None:
    """Each task before (the commit `ref`) and after (now), and the medians."""
    print(f"\nBefore ({ref}) and after (now), same server and run:")
    print(
        f"{'task':<20}{'ok':>4}{'calls':>6}{'seconds':>9}  |{'ok':>4}{'calls':>6}"
        f"{'seconds':>9}{'reused':>8}{'evaluated':>10}"
    )
    rows = {r.task: r for r in before}
    for r in after:
        b = rows.get(r.task)
        head = f"{b.ok!s:>4}{b.calls:>6}{b.seconds:>9.1f}" if b else f"{'-':>19}"
        print(
            f"{r.task:<20}{head}  |{r.ok!s:>4}{r.calls:>6}{r.seconds:>9.1f}{r.reused:>8}"
            f"{r.prompt - r.reused:>10}"
        )
    if before:
        median_before = statistics.median(r.seconds for r in before)
        median_after = statistics.median(r.seconds for r in after)
        print(
            f"Median seconds per task: before {median_before:.0f}, after {median_after:.0f} "
            f"({median_after / max(median_before, 0.001):.2f}x); solved before "
            f"{sum(r.ok for r in before)}/{len(before)}, after {sum(r.ok for r in after)}/"
            f"{len(after)}"
        )


async def main(args: argparse.Namespace) -> list[Result]:
    results: list[Result] = []
    before: list[Result] = []
    tree = snapshot(args.before) if args.before else None
    with TestWebsite() as site:
        settings = {
            "allow_hosts": site.origin,
            "web_enrichment": False,
            "crawl_max_pages": 2,
            "crawl_max_depth": 0,
        }
        async with model_of(args) as llm:
            for task in suite(site):  # type: ignore[arg-type]
                if args.only and task.name not in args.only:
                    continue
                if tree is not None and (earlier := run_before(tree, task.name, args)):
                    before.append(earlier)
                    print(
                        f"{task.name} before: {'ok' if earlier.ok else 'not ok'} "
                        f"({earlier.status}, {earlier.calls} calls, {earlier.seconds:.0f} s)",
                        flush=True,
                    )
                result = await run_task(task, llm, settings, args)
                print(
                    f"{task.name}: {'ok' if result.ok else 'not ok'} ({result.status}, "
                    f"{result.calls} calls, {result.seconds:.0f} s, prompt tokens reused "
                    f"{result.reused}/{result.prompt}) "
                    f"answer: {' '.join(result.answer.split())[:160]!r}",
                    flush=True,
                )
                results.append(result)
    report(args.model + (f" + {args.small_model} (small)" if args.small_model else ""), results)
    if tree is not None:
        side_by_side(args.before, before, results)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="The server's OpenAI-compatible URL (…/v1).")
    parser.add_argument("--model", help="The model name the server serves.")
    parser.add_argument("--api-key", default="unused")
    parser.add_argument(
        "--small-model", help="A small model for Stage 2 and the review (per-stage routing)."
    )
    parser.add_argument("--small-base-url", help="The small model's server (default: --base-url).")
    parser.add_argument("--timeout", type=float, default=120.0, help="Seconds per call (base).")
    parser.add_argument(
        "--timeout-per-1k", type=float, default=30.0, help="Seconds more per 1,000 tokens."
    )
    parser.add_argument("--only", action="append", help="Run only this task (repeatable).")
    parser.add_argument("--max-steps", type=int, default=4, help="Step limit per task.")
    parser.add_argument(
        "--seconds", type=float, default=900, help="Time budget of each task's round."
    )
    parser.add_argument(
        "--slots",
        default="auto",
        help="The server's slots for prefix reuse: auto (ask llama.cpp's /props), off, or N.",
    )
    parser.add_argument(
        "--before",
        help="Run each task first as this commit had it (side by side), e.g. HEAD~3, or as "
        "a copy of the repository in this directory has it.",
    )
    parser.add_argument("--repeat", type=int, default=1, help="Run the suite this many times.")
    parser.add_argument("--json", type=Path, help="Also write the results here.")
    parser.add_argument("--verbose", action="store_true", help="Print each task's events.")
    arguments = parser.parse_args()
    if not arguments.base_url or not arguments.model:
        print(HOW_TO_START)
        sys.exit(2)
    done: list[Result] = []
    for run in range(arguments.repeat):
        if arguments.repeat > 1:
            print(f"\n=== Run {run + 1} of {arguments.repeat}", flush=True)
        done += asyncio.run(main(arguments))
        if arguments.json:  # after each run: a stopped series keeps what it measured
            arguments.json.write_text(json.dumps([r.__dict__ for r in done], indent=2))
    if arguments.repeat > 1:
        per_run = len(done) // arguments.repeat
        solved = [sum(r.ok for r in done[i : i + per_run]) for i in range(0, len(done), per_run)]
        print(f"\nSolved per run: {', '.join(f'{n}/{per_run}' for n in solved)}")
