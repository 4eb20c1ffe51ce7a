"""A small blocking client of the sandbox service, as ``limbo mcp`` uses it.

Standard library only (``http.client``), one persistent keep-alive connection with
``TCP_NODELAY`` (a request's headers and body are written separately; without it Nagle's
algorithm holds the body back until the server's delayed ACK, ~40 ms a call). Calls are
serialised by a lock: the world behind the service executes one call at a time anyway.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from limbo_plugin.server.wire import CALL_PATH, MAX_BODY_BYTES, TOOLS_PATH, call_body


class SandboxError(Exception):
    """The sandbox service could not be reached, or refused the request (one line)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class _NoDelayConnection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class SandboxClient:
    """``list_tools()`` and ``call(name, arguments)`` against one episode's sandbox URL."""

    def __init__(self, url: str, token: str, *, timeout_s: float = 300.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise SandboxError(f"sandbox URL must be http://host:port, got {url!r}")
        self.url = url
        self._host, self._port = parts.hostname, parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}",
                         "Content-Type": "application/json"}
        self._timeout_s = timeout_s
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def list_tools(self) -> list[dict[str, Any]]:
        tools = self._request("GET", TOOLS_PATH).get("tools")
        if not isinstance(tools, list):
            raise SandboxError("the sandbox returned no tool list")
        return tools

    def call(self, name: Any, arguments: Any) -> tuple[str, bool]:
        """The result's canonical text and whether it is a tool error. ``name`` and
        ``arguments`` go as the agent sent them (a name that is no string too): the episode
        answers what is wrong with them with the tool error an in-process agent gets."""
        body, sent = call_body(name, arguments), name
        if len(body) > MAX_BODY_BYTES:
            from limbo_plugin.server.oversized import fitted_call

            body, sent = fitted_call(name, arguments)
        reply = self._request("POST", CALL_PATH, body.encode("ascii"))
        text, is_error = reply.get("text"), reply.get("isError")
        if not isinstance(text, str) or not isinstance(is_error, bool):
            raise SandboxError("the sandbox returned a malformed call result")
        if sent is not name:
            from limbo_plugin.server.oversized import restored_name

            text = restored_name(text, sent, name)
        return text, is_error

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _request(self, method: str, path: str, body: bytes | None = None) -> dict[str, Any]:
        # No retry on a broken connection: a call that reached the world and lost its answer
        # must not be sent twice (that is the very duplicate Limbo measures). The service keeps
        # keep-alive connections open for as long as it runs, so a dead one means it is gone.
        with self._lock:
            if self._conn is None:
                self._conn = _NoDelayConnection(self._host, self._port, timeout=self._timeout_s)
            try:
                self._conn.request(method, self._prefix + path, body=body, headers=self._headers)
                response = self._conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self._conn.close()
                self._conn = None
                raise SandboxError(f"cannot reach the sandbox at {self.url}: "
                                   f"{exc or type(exc).__name__}") from None
            if response.will_close:
                self._conn.close()
                self._conn = None
            return _payload(response.status, data)


def _payload(status: int, data: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(data or b"{}")
    except ValueError:
        payload = {}
    if status != 200:
        error = payload.get("error") if isinstance(payload, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        raise SandboxError(f"the sandbox answered HTTP {status}: {message or 'no detail'}",
                           status)
    if not isinstance(payload, dict):
        raise SandboxError("the sandbox returned a body that is not a JSON object")
    return payload
