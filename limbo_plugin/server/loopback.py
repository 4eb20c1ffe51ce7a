"""A threading HTTP/1.1 server on the loopback interface, tuned for many small requests.

Both local services Limbo runs — the sandbox service harnesses reach through MCP and the scripted
model server the tests put behind litellm and the harness CLIs — are request/response loops of
a few hundred bytes. Two details decide their latency:

- ``TCP_NODELAY`` on every accepted socket: without it the headers and the body of a response go
  out in two small segments and Nagle's algorithm plus the client's delayed ACK add ~40 ms to a
  call.
- keep-alive (HTTP/1.1 with ``Content-Length`` on every response), so a client reuses one
  connection per episode instead of paying a TCP handshake per call.

:meth:`LoopbackHTTPServer.stop` also shuts down idle keep-alive connections, whose handler threads
would otherwise outlive the server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

LOOPBACK = "127.0.0.1"


class LoopbackHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with ``TCP_NODELAY``, tracked connections and a clean stop."""

    daemon_threads = True
    block_on_close = False  # keep-alive handler threads would otherwise block server_close()
    allow_reuse_address = True
    max_connections = 256
    """Open connections served at once; one more is closed unanswered. Each costs a thread, so
    a local process opening thousands cannot exhaust the worker's memory or threads (an
    episode's own client holds a handful)."""

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__(address, handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.connections_lock:
            self.connections.add(sock)
        return sock, address

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.connections_lock:
            return len(self.connections) <= self.max_connections

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request is routine; nothing to print."""

    def serve_in_thread(self, name: str) -> LoopbackHTTPServer:
        self._thread = threading.Thread(target=self.serve_forever,
                                        kwargs={"poll_interval": 0.05}, name=name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop every open connection and release the port."""
        self.shutdown()
        with self.connections_lock:
            connections, self.connections = list(self.connections), set()
        for sock in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
