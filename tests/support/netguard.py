"""Refuse every network connection that would leave the machine, before it is attempted.

Tests may only talk to loopback addresses (127.0.0.0/8, ::1) and AF_UNIX sockets. Anything
else raises `NetworkBlocked` from inside `socket.connect` (so no packet is ever sent) and is
recorded in `blocked`. Name lookups of anything but "localhost" and this host's own name are
refused the same way, since a DNS query is itself outbound traffic.

`NetworkBlocked` is a `RuntimeError`, not an `OSError`: code that retries or swallows
connection errors (``except OSError``) must not mistake the guard for a flaky network.
The pytest plugin fails any test that leaves entries in `blocked`, so even an attempt
that some broad ``except Exception`` hides is reported. Tests that provoke one on purpose
wrap it in `expect_blocked()`.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BlockedAttempt",
    "NetworkBlocked",
    "blocked",
    "expect_blocked",
    "guarded",
    "install",
    "installed",
    "is_loopback_host",
    "uninstall",
]


class NetworkBlocked(RuntimeError):
    """A test tried to reach a non-loopback address; nothing was sent."""


@dataclass(frozen=True)
class BlockedAttempt:
    """One refused attempt: the socket operation and the address it was aimed at."""

    operation: str
    address: Any


blocked: list[BlockedAttempt] = []
"""Every refused attempt since the list was last cleared, oldest first."""

_lock = threading.Lock()
_depth = 0
_originals: dict[str, Any] = {}


def is_loopback_host(host: object) -> bool:
    """Whether `host` (an IP literal or "localhost") can only mean this machine."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _is_ip_literal(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    try:
        ipaddress.ip_address(str(host))
    except ValueError:
        return False
    return True


def _refuse(operation: str, address: Any) -> NetworkBlocked:
    blocked.append(BlockedAttempt(operation, address))
    return NetworkBlocked(
        f"network access blocked in tests: {operation} to {address!r} "
        "(only loopback addresses and AF_UNIX sockets are allowed)"
    )


def _check_peer(sock: socket.socket, operation: str, address: Any) -> None:
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # AF_UNIX, netlink and friends never leave the machine.
    host = address[0] if isinstance(address, tuple) else address
    if is_loopback_host(host):
        return
    error = _refuse(operation, address)
    # Close it: callers such as socket.create_connection only close on OSError, and an
    # orphaned socket would surface later as a ResourceWarning in some unrelated test.
    sock.close()
    raise error


def _connect(self: socket.socket, address: Any) -> None:
    _check_peer(self, "connect", address)
    return _originals["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check_peer(self, "connect_ex", address)
    return _originals["connect_ex"](self, address)


def _sendto(self: socket.socket, data: Any, *flags_and_address: Any) -> int:
    _check_peer(self, "sendto", flags_and_address[-1])
    return _originals["sendto"](self, data, *flags_and_address)


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    local_names = {"localhost", socket.gethostname().lower()}
    name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
    if name is None or _is_ip_literal(name) or str(name).lower() in local_names:
        return _originals["getaddrinfo"](host, port, *args, **kwargs)
    raise _refuse("getaddrinfo", (host, port))


def install() -> None:
    """Start refusing non-loopback connections (nested calls are counted)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth > 1:
            return
        _originals.update(
            connect=socket.socket.connect,
            connect_ex=socket.socket.connect_ex,
            sendto=socket.socket.sendto,
            getaddrinfo=socket.getaddrinfo,
        )
        socket.socket.connect = _connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]
        socket.socket.sendto = _sendto  # type: ignore[assignment]
        socket.getaddrinfo = _getaddrinfo


def uninstall() -> None:
    """Undo one `install()`; the last one restores the real socket functions."""
    global _depth
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth:
            return
        socket.socket.connect = _originals["connect"]  # type: ignore[method-assign]
        socket.socket.connect_ex = _originals["connect_ex"]  # type: ignore[method-assign]
        socket.socket.sendto = _originals["sendto"]  # type: ignore[method-assign]
        socket.getaddrinfo = _originals["getaddrinfo"]
        _originals.clear()


def installed() -> bool:
    """Whether the guard is active."""
    return _depth > 0


@contextmanager
def guarded() -> Iterator[list[BlockedAttempt]]:
    """Run a block with the guard installed; yields the shared `blocked` list."""
    install()
    try:
        yield blocked
    finally:
        uninstall()


@contextmanager
def expect_blocked() -> Iterator[list[BlockedAttempt]]:
    """Assert that the block was refused network access at least once.

    Yields a list that, on exit, holds the attempts made inside the block; they are taken
    out of `blocked`, so the plugin's end-of-test check does not count them as stray.
    """
    start = len(blocked)
    caught: list[BlockedAttempt] = []
    try:
        yield caught
    finally:
        caught.extend(blocked[start:])
        del blocked[start:]
    assert caught, "expected a blocked network attempt, but none was made"
