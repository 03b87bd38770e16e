"""A loopback TCP proxy that a test can cut, to interrupt a real server (Redis) for one client.

While cut, open connections are closed and new ones are accepted and closed at once, as a
network blip or a restarting server looks to the client.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress


class TcpProxy:
    """Forwards 127.0.0.1:<port> to `upstream`; `cut()` and `restore()` interrupt it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.connections = 0
        """Connections accepted while not cut."""

    def __enter__(self) -> TcpProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._listener.close()
        self._close_all()

    def cut(self) -> None:
        """Drop every connection and refuse new ones until restore()."""
        self._cut.set()
        self._close_all()

    def restore(self) -> None:
        """Forward again."""
        self._cut.clear()

    def _close_all(self) -> None:
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._cut.is_set():
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open |= {client, server}
                self.connections += 1
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        for sock in (source, target):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
