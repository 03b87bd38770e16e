"""Parsing a document in a child process with a memory and a wall-clock limit.

The server runs asyncio and threads, so it is never forked. A small helper process (the
zygote) is started once with subprocess, imports the parsers and does nothing but fork: one
child per document. The child lowers its own limits (RLIMIT_AS: its size at start plus
Limits.max_memory; RLIMIT_CPU as a backstop), reads the document from a socket, parses it
and answers in JSON (never a pickle: the child has read hostile bytes). The parent waits
without blocking its event loop and kills the child, through a pidfd so it can never hit
another process, when the time is up, when the action is cancelled, or once it answered.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import math
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading

from workflows.tools.documents.extracted import Extracted, ExtractionError, Limits

_FRAME = struct.Struct("!Q")
_CHUNK = 256 * 1024
_lock = threading.Lock()
_zygote: subprocess.Popen[bytes] | None = None
_control: socket.socket | None = None


async def extract_isolated(data: bytes, *, name: str, mime: str, limits: Limits) -> Extracted:
    """extract() in a child process; ExtractionError for the document and for the limits."""
    if len(data) > limits.max_bytes:
        raise ExtractionError(
            f"{name} is too large to read ({len(data):,} bytes; the limit is {limits.max_bytes:,})"
        )
    reader, writer = await asyncio.open_unix_connection(sock=_start_child())
    pidfd: int | None = None
    try:
        async with asyncio.timeout(limits.max_seconds):
            (pid,) = _FRAME.unpack(await reader.readexactly(_FRAME.size))  # from the zygote
            pidfd = os.pidfd_open(pid)
            request = json.dumps({"name": name, "mime": mime, "limits": vars(limits)}).encode()
            writer.write(_FRAME.pack(len(request)) + request + _FRAME.pack(len(data)))
            view = memoryview(data)
            for start in range(0, len(data), _CHUNK):
                # A piece at a time: what the socket does not take at once is copied into
                # the transport's buffer, which must not become a second copy of the file.
                writer.write(view[start : start + _CHUNK])
                await writer.drain()
            await writer.drain()
            (size,) = _FRAME.unpack(await reader.readexactly(_FRAME.size))
            if size > 8 * limits.max_chars + 1_000_000:
                raise ExtractionError(f"{name}: the parser's answer is too large")
            answer = await reader.readexactly(size)
    except TimeoutError:
        raise ExtractionError(
            f"{name}: parsing took longer than {limits.max_seconds:g} s"
        ) from None
    except (asyncio.IncompleteReadError, ConnectionError):
        raise ExtractionError(
            f"{name}: the parser stopped without an answer (it may have needed more than "
            f"{limits.max_memory / 1_000_000:g} MB of memory)"
        ) from None
    finally:
        writer.close()
        if pidfd is not None:
            await _kill(pidfd)
    return _result(answer)


def _result(answer: bytes) -> Extracted:
    parsed = json.loads(answer)
    if "error" in parsed:
        raise ExtractionError(str(parsed["error"]))
    return Extracted.model_validate(parsed["extracted"])


async def _kill(pidfd: int) -> None:
    """SIGKILL the child the pidfd names and wait until it is gone (the kernel reaps it: the
    zygote ignores SIGCHLD); a pidfd turns readable when its process exits."""
    loop = asyncio.get_running_loop()
    gone: asyncio.Future[None] = loop.create_future()

    def exited() -> None:
        if not gone.done():
            gone.set_result(None)

    loop.add_reader(pidfd, exited)
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        async with asyncio.timeout(5):
            await gone
    except ProcessLookupError:
        pass
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


def _start_child() -> socket.socket:
    """A socket to a freshly forked child, starting the zygote if it is not running."""
    global _zygote, _control
    ours, theirs = socket.socketpair()
    try:
        with _lock:
            if _zygote is None or _zygote.poll() is not None:
                _start_zygote()
            assert _control is not None
            try:
                socket.send_fds(_control, [b"j"], [theirs.fileno()])
            except OSError:  # The zygote went away since: start another, once.
                _start_zygote()
                socket.send_fds(_control, [b"j"], [theirs.fileno()])
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return ours


def start_zygote() -> None:
    """Start the parser process now (a server calls this at start-up), so the first document
    read does not wait for it; a no-op while it runs."""
    with _lock:
        if _zygote is None or _zygote.poll() is not None:
            _start_zygote()


def _start_zygote() -> None:
    global _zygote, _control
    shutdown_zygote()
    ours, theirs = socket.socketpair()
    boot = (
        f"import sys; sys.path[:0] = {sys.path!r}; "
        "from workflows.tools.documents.isolation import zygote_main; "
        f"zygote_main({theirs.fileno()})"
    )
    _zygote = subprocess.Popen(
        [sys.executable, "-c", boot], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL
    )
    theirs.close()
    _control = ours


@atexit.register
def shutdown_zygote() -> None:
    """Stop the zygote (it exits when its control socket closes) and reap it."""
    global _zygote, _control
    if _control is not None:
        _control.close()
        _control = None
    if _zygote is not None:
        try:
            _zygote.wait(5)
        except subprocess.TimeoutExpired:
            _zygote.kill()
            _zygote.wait()
        _zygote = None


def zygote_pid() -> int | None:
    """The zygote's process id while it runs (for tests and diagnostics)."""
    return _zygote.pid if _zygote is not None and _zygote.poll() is None else None


# --- In the zygote and its children ------------------------------------------------------


def zygote_main(control_fd: int) -> None:
    """Fork a child for every socket the parent sends; exit when the parent goes."""
    import trafilatura  # noqa: F401  # Imported once here, so children start warm.

    from workflows.tools.documents import parse as extract  # noqa: F401

    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # The kernel reaps the children.
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle.
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not message:
            return
        for fd in fds:
            pid = os.fork()
            if pid == 0:
                control.close()
                _child(socket.socket(fileno=fd))
            os.write(fd, _FRAME.pack(pid))
            os.close(fd)


def _child(job: socket.socket) -> None:
    """Parse one document under the limits, answer, exit (never returns)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    code = 0
    try:
        stream = job.makefile("rb")
        (size,) = _FRAME.unpack(stream.read(_FRAME.size))
        request = json.loads(stream.read(size))
        limits = Limits(**request["limits"])
        _limit_self(limits)
        (size,) = _FRAME.unpack(stream.read(_FRAME.size))
        data = stream.read(size)
        answer = json.dumps(_parse(data, request["name"], request["mime"], limits)).encode()
        job.sendall(_FRAME.pack(len(answer)) + answer)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _parse(data: bytes, name: str, mime: str, limits: Limits) -> dict[str, object]:
    from workflows.tools.documents.parse import extract

    try:
        extracted = extract(data, name=name, mime=mime, limits=limits)
        return {"extracted": extracted.model_dump(exclude={"text"})}
    except ExtractionError as error:
        return {"error": str(error)}


def _limit_self(limits: Limits) -> None:
    """Cap this process's address space and CPU time; no core dumps."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    size = int(fields["VmSize"].split()[0]) * 1024
    memory = size + limits.max_memory
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    seconds = math.ceil(limits.max_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
