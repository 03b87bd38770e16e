"""Tests may reach loopback only; anything else is refused before a connection starts."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import openai
import pytest

from tests.support import netguard
from tests.support.netguard import NetworkBlocked, expect_blocked

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def listener():
    """A TCP server socket on 127.0.0.1."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


@pytest.fixture
def real_connects(monkeypatch):
    """Records every call that gets past the guard to the real socket.connect."""
    calls = []
    real = netguard._originals["connect"]

    def spy(sock, address):
        calls.append(address)
        return real(sock, address)

    monkeypatch.setitem(netguard._originals, "connect", spy)
    return calls


def test_guard_is_installed_for_every_test():
    """The plugin installs the guard around each test."""
    assert netguard.installed()


def test_private_address_is_refused_and_recorded():
    """Connecting to 10.0.0.1:80 raises NetworkBlocked and records the attempt."""
    with expect_blocked() as attempts, socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect(("10.0.0.1", 80))
    assert attempts == [netguard.BlockedAttempt("connect", ("10.0.0.1", 80))]


def test_refusal_happens_before_any_connection(real_connects):
    """The real connect is never called: the refusal is NetworkBlocked, not a timeout."""
    with expect_blocked(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.settimeout(30)
        sock.connect(("93.184.216.34", 80))
    assert real_connects == []


def test_create_connection_is_refused_and_leaves_no_open_socket():
    """socket.create_connection to a public address raises, and no socket is leaked."""
    with expect_blocked() as attempts, pytest.raises(NetworkBlocked):
        socket.create_connection(("93.184.216.34", 443), timeout=30)
    assert attempts[0].address == ("93.184.216.34", 443)


def test_connect_ex_is_refused():
    """connect_ex raises instead of returning an error number."""
    with expect_blocked(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect_ex(("10.0.0.1", 80))


def test_udp_sendto_is_refused():
    """A datagram to a public resolver is refused before it is sent."""
    with (
        expect_blocked(),
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
        pytest.raises(NetworkBlocked),
    ):
        sock.sendto(b"query", ("8.8.8.8", 53))


def test_name_lookup_is_refused():
    """Resolving a public name is refused: the DNS query would leave the machine."""
    with expect_blocked() as attempts, pytest.raises(NetworkBlocked):
        socket.getaddrinfo("example.com", 443)
    assert attempts[0].operation == "getaddrinfo"


def test_ip_literals_and_localhost_resolve():
    """Resolving an IP literal or localhost needs no network and is allowed."""
    assert socket.getaddrinfo("10.0.0.1", 80)[0][4][0] == "10.0.0.1"
    assert socket.getaddrinfo("localhost", 80)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("10.0.0.1", False),
        ("0.0.0.0", False),
        ("::ffff:10.0.0.1", False),
        ("2001:db8::1", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_only_loopback_counts_as_local(host, loopback):
    """127.0.0.0/8, ::1 (also IPv4-mapped) and localhost are loopback; nothing else."""
    assert netguard.is_loopback_host(host) is loopback


def test_loopback_connection_works(listener):
    """Connecting to 127.0.0.1 goes through and reaches the listener."""
    with socket.create_connection(listener.getsockname(), timeout=5) as sock:
        sock.sendall(b"ping")
        peer, _ = listener.accept()
        with peer:
            assert peer.recv(4) == b"ping"


def test_unix_socket_works(tmp_path):
    """AF_UNIX sockets never leave the machine and are allowed."""
    path = str(tmp_path / "s")
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
        server.bind(path)
        server.listen()
        client.connect(path)
        server.accept()[0].close()


async def test_asyncio_connection_is_refused():
    """asyncio.open_connection to a private address raises NetworkBlocked."""
    with expect_blocked(), pytest.raises(NetworkBlocked):
        await asyncio.open_connection("10.0.0.1", 80)


async def test_asyncio_loopback_connection_works(listener):
    """asyncio connections to loopback go through."""
    reader, writer = await asyncio.open_connection(*listener.getsockname())
    writer.close()
    await writer.wait_closed()
    listener.accept()[0].close()


def test_retrying_client_surfaces_the_refusal():
    """The openai client neither retries nor wraps NetworkBlocked as a connection error."""
    with (
        openai.OpenAI(base_url="http://10.0.0.1/v1", api_key="k", max_retries=3) as client,
        expect_blocked() as attempts,
        pytest.raises(NetworkBlocked),
    ):
        client.models.list()
    assert len(attempts) == 1


def test_nested_guard_stays_installed():
    """Leaving a nested guarded() block keeps the outer guard in force."""
    with netguard.guarded():
        pass
    assert netguard.installed()


def test_expect_blocked_fails_when_nothing_was_blocked():
    """expect_blocked() is an assertion: a block that made no attempt fails it."""
    with (
        pytest.raises(AssertionError, match="expected a blocked network attempt"),
        expect_blocked(),
    ):
        pass


def test_plugin_fails_a_test_that_swallows_a_refusal(tmp_path):
    """A refusal hidden by a broad except still fails the test that caused it."""
    (tmp_path / "test_inner.py").write_text(
        "import socket\n"
        "from tests.support.netguard import expect_blocked\n"
        "def test_swallows():\n"
        "    try:\n"
        "        socket.create_connection(('10.0.0.1', 80))\n"
        "    except Exception:\n"
        "        pass\n"
        "def test_expects():\n"
        "    with expect_blocked():\n"
        "        try:\n"
        "            socket.create_connection(('10.0.0.1', 80))\n"
        "        except Exception:\n"
        "            pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.support.plugin", "-p", "no:django"]
        + ["-p", "no:asyncio", "-p", "no:cacheprovider", "-q", "-W", "error", str(tmp_path)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "connect ('10.0.0.1', 80)" in result.stdout
