"""Hostile documents are parsed in a killed-on-time child: the web process neither grows
nor waits, and nothing keeps running after the user was told it failed."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

from tests.tools import _hostile_files as hostile
from tests.tools._documents_helpers import LOL_XML, make_docx, rebuild_docx, sample_files
from workflows.tools.documents import isolation
from workflows.tools.documents.extracted import ExtractionError, Limits
from workflows.tools.documents.isolation import extract_isolated
from workflows.tools.documents.parse import DOCX_MIME, extract


def _status(field: str) -> int:
    """A /proc/self/status field in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise KeyError(field)


def _children() -> list[int]:
    """The zygote's children still alive (parsers that were not stopped)."""
    parent = isolation.zygote_pid()
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if parent is not None and int(fields[1]) == parent and fields[0] not in "ZX":
            found.append(int(stat.parent.name))
    return found


async def _until(condition, *, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


@contextmanager
def watched() -> Iterator[None]:
    """Reset the peak RSS, and check afterwards that it stayed within a few MB and that no
    thread, multiprocessing child or parser process is left."""
    threads = set(threading.enumerate())
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status("VmHWM")
    yield
    assert _status("VmHWM") - before <= 8
    assert set(threading.enumerate()) <= threads
    assert multiprocessing.active_children() == []
    assert _children() == []


HOSTILE = {
    "lying-header zip bomb (1 MB declaring 2 KB, inflating to 1 GB)": (
        hostile.lying_docx_bomb,
        r"word/document\.xml inflates beyond the 2,048 bytes its header declares",
    ),
    "wide XML bomb (95 MB of tiny elements, under the ratio cap)": (
        hostile.wide_xml_docx,
        r"too many XML elements \(more than 1,000,000\)",
    ),
    "deep XML bomb (100,000 levels)": (
        hostile.deep_xml_docx,
        r"nests XML elements more than 200 levels deep",
    ),
    "one 40 MB text element (under the ratio cap)": (
        hostile.huge_text_docx,
        r"bomb\.docx is not a readable docx file \(.*Text node too long",
    ),
    "entity bomb (billion laughs)": (
        lambda: rebuild_docx(make_docx(), replace={"word/document.xml": LOL_XML}),
        r"declares a DTD or entities",
    ),
}


@pytest.mark.parametrize("build", HOSTILE.values(), ids=HOSTILE.keys())
async def test_hostile_docx_is_refused_in_time_without_growing_the_parent(build):
    """Each hostile DOCX is refused with a message saying why, within 5 s, while the parent's
    peak RSS grows by a few MB at most and no parser is left running."""
    make, message = build
    data = make()
    started = time.monotonic()
    with watched(), pytest.raises(ExtractionError, match=message):
        await extract_isolated(data, name="bomb.docx", mime=DOCX_MIME, limits=Limits())
    assert time.monotonic() - started < 5


async def test_a_lying_member_is_refused_in_any_part():
    """Any part that lies about its size is stopped as soon as it exceeds it."""
    data = hostile.lying_docx_bomb("docProps/core.xml", inflated=200_000_000)
    with watched(), pytest.raises(ExtractionError, match=r"core\.xml inflates beyond"):
        await extract_isolated(data, name="bomb.docx", mime=DOCX_MIME, limits=Limits())


async def test_the_child_memory_limit_is_a_clear_error():
    """A parse needing more than the child's memory limit fails with that limit named."""
    data = json.dumps(list(range(1_000_000))).encode()
    limits = Limits(max_memory=30_000_000)
    with watched(), pytest.raises(ExtractionError, match=r"more than 30 MB of memory"):
        await extract_isolated(data, name="big.json", mime="application/json", limits=limits)


async def test_a_parse_past_its_time_is_killed():
    """A parse still running at max_seconds is killed and reported as too slow."""
    data = hostile.wide_xml_docx()
    limits = Limits(max_xml_elements=10**9, max_seconds=1)
    started = time.monotonic()
    with watched():
        with pytest.raises(ExtractionError, match=r"bomb\.docx: parsing took longer than 1 s"):
            await extract_isolated(data, name="bomb.docx", mime=DOCX_MIME, limits=limits)
        assert time.monotonic() - started < 2
        await _until(lambda: not _children())


async def test_cancelling_the_action_kills_the_parser():
    """Stop cancels the tool: the child parsing the document is killed at once."""
    data = hostile.wide_xml_docx()
    limits = Limits(max_xml_elements=10**9)
    with watched():
        task = asyncio.create_task(
            extract_isolated(data, name="bomb.docx", mime=DOCX_MIME, limits=limits)
        )
        await _until(lambda: bool(_children()))
        await asyncio.sleep(0.2)  # Well into the parse.
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _until(lambda: not _children())


async def test_normal_documents_extract_as_in_process():
    """Every supported type gives exactly what extract() gives in this process."""
    for name, mime, data in sample_files():
        isolated = await extract_isolated(data, name=name, mime=mime, limits=Limits())
        assert isolated == extract(data, name=name, mime=mime)


async def test_concurrent_parses_each_get_their_own_child():
    """Parses running at once do not wait for one another or mix their answers."""
    files = sample_files()
    results = await asyncio.gather(
        *(extract_isolated(d, name=n, mime=m, limits=Limits()) for n, m, d in files)
    )
    assert [r.kind for r in results] == ["pdf", "docx", "html", "markdown", "text", "csv", "json"]


def test_the_zygote_stops_when_shut_down():
    """shutdown_zygote() stops and reaps the helper process; the next parse starts it again."""
    asyncio.run(extract_isolated(b"hi", name="a.txt", mime="text/plain", limits=Limits()))
    pid = isolation.zygote_pid()
    assert pid is not None
    isolation.shutdown_zygote()
    assert isolation.zygote_pid() is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_dead_zygote_is_replaced():
    """If the zygote was killed, the next parse starts a new one and succeeds."""
    await extract_isolated(b"hi", name="a.txt", mime="text/plain", limits=Limits())
    pid = isolation.zygote_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    await _until(lambda: isolation.zygote_pid() is None)
    result = await extract_isolated(b"hi", name="a.txt", mime="text/plain", limits=Limits())
    assert result.text == "hi"
    assert isolation.zygote_pid() not in (None, pid)


async def test_three_bombs_at_once_leave_the_event_loop_responsive():
    """Three hostile DOCX parsed at once: the parent's event loop keeps answering (the
    parses run elsewhere), its peak RSS stays flat, and each gets its refusal."""
    data = hostile.wide_xml_docx()
    lags: list[float] = []

    async def tick() -> None:
        while True:
            started = time.monotonic()
            await asyncio.sleep(0.01)
            lags.append(time.monotonic() - started - 0.01)

    with watched():
        ticker = asyncio.create_task(tick())
        results = await asyncio.gather(
            *(
                extract_isolated(data, name=f"b{n}.docx", mime=DOCX_MIME, limits=Limits())
                for n in range(3)
            ),
            return_exceptions=True,
        )
        ticker.cancel()
        with suppress(asyncio.CancelledError):
            await ticker
    assert all("too many XML elements" in str(result) for result in results)
    assert max(lags) < 0.2
