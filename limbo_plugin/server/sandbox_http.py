"""The sandbox service: an episode's tools over HTTP on the loopback interface.

Harnesses run as separate processes, so the episode they act on must be reachable over a socket.
This service is that socket and nothing more. It exposes exactly two things, both scoped to one
episode by a bearer token:

``GET  /v1/tools``        the episode's tools (name, description, JSON schema, MCP annotations)
``POST /v1/tools/call``   ``{"name": …, "arguments": {…}}`` → ``{"text": …, "isError": …}``

A call goes to the episode's :class:`~limbo_plugin.agents.base.AgentSession`, i.e. through the
recovery condition, the trace, the call budget and the fault transport, exactly as an in-process
agent's call does — which is why ``--condition guard`` applies to every harness without a line of
harness-specific code, and why grading is unchanged. The ledger, the fault plan, the seeds and the
grade stay in this process: no route returns them.

Why one server per worker, reused across episodes: measured side by side
(``benchmarks/mcp_roundtrip.py``), a fresh token on the shared server costs ~1 ms per episode and
a server started and stopped per episode ~50 ms (mostly its loop's shutdown poll). Reuse costs
nothing in isolation, because each episode gets a fresh token (:meth:`SandboxServer.open`) that
is revoked when the episode ends: a request with no token, a wrong one, or an earlier episode's
gets 401.

Calls into one episode are serialised (the world is single-threaded); a malformed request gets a
4xx with a JSON error body and the server keeps serving.
"""

from __future__ import annotations

import atexit
import hmac
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol

from limbo_plugin.errors import EpisodeOver
from limbo_plugin.server.loopback import LOOPBACK, LoopbackHTTPServer
from limbo_plugin.server.wire import (
    CALL_PATH,
    HEALTH_PATH,
    MAX_BODY_BYTES,
    TOOLS_PATH,
    result_wire,
    tool_wire,
)
from limbo_plugin.toolapi import RefusedArguments, ToolResult, tool_error

if TYPE_CHECKING:
    from limbo_plugin.contracts import ToolDefinition


class AgentSession(Protocol):
    """What the service needs of an episode: its tools and a way to call them. The episode's
    :class:`~limbo_plugin.agents.base.AgentSession` is one; naming only this keeps the server
    below the agents that use it."""

    @property
    def shared_tools(self) -> list[ToolDefinition]: ...

    def call(self, name: str, arguments: Any = None) -> ToolResult: ...



@dataclass
class EpisodeLease:
    """One episode's access to the sandbox service, and its call log.

    The log (:attr:`listings`, :attr:`calls`) is what the harness runner judges a run by: a
    harness whose tools never loaded never listed them, whatever its exit code says.
    :attr:`failure` holds an exception the episode itself raised while serving a call (a bug,
    never a tool error); the runner re-raises it after the harness is done.
    """

    server: SandboxServer
    session: AgentSession
    token: str
    tools: list[dict[str, Any]]
    listings: int = 0
    calls: int = 0
    failure: BaseException | None = None
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.revoke(self)


class SandboxServer:
    """The loopback HTTP service; :meth:`open` binds an episode to a fresh token."""

    def __init__(self, host: str = LOOPBACK, port: int = 0) -> None:
        self._host, self._port = host, port
        self._httpd: LoopbackHTTPServer | None = None
        self._leases: dict[str, EpisodeLease] = {}
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> SandboxServer:
        if self._httpd is None:
            httpd = LoopbackHTTPServer((self._host, self._port), _Handler)
            httpd.sandbox = self  # type: ignore[attr-defined]
            self._httpd = httpd.serve_in_thread("limbo-sandbox")
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.stop()

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the sandbox service is not running")
        return f"http://{self._host}:{self._httpd.port}"

    # -- episodes -------------------------------------------------------------------------------
    def open(self, session: AgentSession) -> EpisodeLease:
        """Expose ``session`` under a fresh token until the lease is closed."""
        self.start()
        lease = EpisodeLease(server=self, session=session, token=secrets.token_urlsafe(32),
                             tools=[tool_wire(t) for t in session.shared_tools])
        with self._lock:
            self._leases[lease.token] = lease
        return lease

    @contextmanager
    def episode(self, session: AgentSession) -> Iterator[EpisodeLease]:
        lease = self.open(session)
        try:
            yield lease
        finally:
            lease.close()

    def revoke(self, lease: EpisodeLease) -> None:
        with self._lock:
            self._leases.pop(lease.token, None)
        with lease.lock:  # waits for a call in progress to finish
            lease.closed = True

    def lease_for(self, authorization: str | None) -> EpisodeLease | None:
        """The open lease whose token the ``Authorization`` header carries, if any."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        token = token.strip()
        with self._lock:
            leases = list(self._leases.items())
        for known, lease in leases:  # constant-time comparison against every open token
            if hmac.compare_digest(known.encode(), token.encode()):
                return lease
        return None


_SHARED: SandboxServer | None = None
_SHARED_LOCK = threading.Lock()


def shared_sandbox() -> SandboxServer:
    """This process's sandbox service (one per pytest worker), started on first use."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = SandboxServer().start()
            atexit.register(_SHARED.stop)
        return _SHARED


class RequestError(Exception):
    """A malformed request: answered with ``status`` and a one-line JSON error."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


BODY_DEADLINE_S = 30.0
"""How long a request's body may take to arrive, whole: a loopback client sends one in
milliseconds."""
IDLE_TIMEOUT_S = 120.0
"""How long a connection may sit between requests (or mid-header) before it is closed."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "limbo-sandbox"
    sys_version = ""
    timeout = IDLE_TIMEOUT_S

    @property
    def sandbox(self) -> SandboxServer:
        sandbox: SandboxServer = self.server.sandbox  # type: ignore[attr-defined]
        return sandbox

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        try:
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            lease = self.sandbox.lease_for(self.headers.get("Authorization"))
            if lease is None and path != HEALTH_PATH:
                # Said before a byte of the body is read: an unauthenticated client costs no
                # buffer, and its unread body ends the connection rather than the next request.
                self.close_connection = True
                raise RequestError(401, "unauthorized",
                                   "missing, invalid or expired bearer token")
            body = self._read_body()
            if path == HEALTH_PATH:
                self._send(200, {"status": "ok"})
                return
            if path not in (TOOLS_PATH, CALL_PATH):
                raise RequestError(404, "not_found", f"no route {path}; the sandbox serves "
                                   f"GET {TOOLS_PATH} and POST {CALL_PATH}")
            expected = "GET" if path == TOOLS_PATH else "POST"
            if method != expected:
                raise RequestError(405, "method_not_allowed", f"{path} accepts {expected} only")
            assert lease is not None
            if path == TOOLS_PATH:
                self._send(200, self._list(lease))
            else:
                self._send(200, self._call(lease, _parse_call(body)))
        except RequestError as exc:
            self._send(exc.status, {"error": {"type": exc.kind, "message": exc.message}})

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            raise RequestError(411, "length_required", "send the body with Content-Length")
        raw = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw)
        except ValueError:
            self.close_connection = True
            raise RequestError(400, "bad_request", f"invalid Content-Length {raw!r}") from None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True  # the unread body would corrupt the next request
            raise RequestError(413, "too_large",
                               f"request body of {length} bytes (limit {MAX_BODY_BYTES})")
        return self._read_within(length, BODY_DEADLINE_S) if length else b""

    def _read_within(self, length: int, seconds: float) -> bytes:
        """``length`` bytes of body, all of them within ``seconds``: a client that trickles a
        body (a slowloris) is cut off rather than holding a thread and a buffer for ever."""
        deadline = time.monotonic() + seconds
        chunks: list[bytes] = []
        remaining = length
        while remaining:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close_connection = True
                raise RequestError(408, "timeout", f"the body did not arrive within {seconds:g} s")
            self.connection.settimeout(left)
            try:
                chunk = self.rfile.read1(min(remaining, 65536))
            except TimeoutError:
                chunk = None
            if chunk is None:
                continue
            if not chunk:
                self.close_connection = True
                raise RequestError(400, "bad_request", "the body ended before Content-Length")
            chunks.append(chunk)
            remaining -= len(chunk)
        self.connection.settimeout(self.timeout)
        return b"".join(chunks)

    def _list(self, lease: EpisodeLease) -> dict[str, Any]:
        with lease.lock:
            if lease.closed:
                raise RequestError(401, "unauthorized", "missing, invalid or expired bearer token")
            lease.listings += 1
        return {"tools": lease.tools}

    def _call(self, lease: EpisodeLease, request: tuple[Any, Any]) -> dict[str, Any]:
        name, arguments = request
        with lease.lock:  # one call at a time: the world is single-threaded
            if lease.closed:
                raise RequestError(401, "unauthorized", "missing, invalid or expired bearer token")
            lease.calls += 1
            try:
                result = lease.session.call(name, arguments)
            except EpisodeOver:
                result = tool_error("episode_over", "the task has ended; no further tool calls "
                                    "are accepted")
            except Exception as exc:  # a bug in the episode, not a tool error: keep it for the
                lease.failure = lease.failure or exc  # runner and tell the client nothing more
                raise RequestError(500, "internal", "the sandbox could not execute the "
                                   "call") from None
        return result_wire(result)

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """Malformed request lines and unsupported methods get a JSON error too (with a status
        line and headers even when the request line was too broken to say HTTP/1.1)."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            self.request_version = self.protocol_version
        self._send(code, {"error": {"type": "bad_request",
                                    "message": message or f"HTTP {code}"}})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a harness episode makes dozens of calls."""


def _parse_call(body: bytes) -> tuple[Any, Any]:
    try:
        payload = json.loads(body or b"null")
    except (ValueError, RecursionError) as exc:
        raise RequestError(400, "bad_request", f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise RequestError(400, "bad_request",
                           'the body must be a JSON object {"name": …, "arguments": {…}}')
    if "name" not in payload:
        raise RequestError(400, "bad_request", 'the body has no "name"')
    unknown = set(payload) - {"name", "arguments", "refused"}
    if unknown:
        raise RequestError(400, "bad_request",
                           f"unknown field(s) {', '.join(sorted(unknown))}; "
                           'expected "name" and "arguments" (and "refused")')
    # A malformed *name* or *arguments* is the agent's mistake, not the request's: the transport
    # answers it with a tool error (a name that is empty or no string names no tool), exactly as
    # it does for an in-process agent.
    name = payload["name"]
    refused = payload.get("refused")
    if refused is not None:  # judged by limbo mcp: too large to send (see RefusedArguments)
        if not isinstance(refused, str) or not refused:
            raise RequestError(400, "bad_request", '"refused" must be a non-empty string')
        return name, RefusedArguments(payload.get("arguments"), refused)
    return name, payload.get("arguments")
