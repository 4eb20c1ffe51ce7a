"""Helpers of the real-server tests: Limbo's catalogue served over MCP, the pinned third-party
servers, and running ``limbo`` as a user does (a subprocess)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.realmcp.servers import SERVERS
from limbo_plugin.server.sandbox_http import SandboxServer
from limbo_plugin.server.wire import TOKEN_ENV
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolResult

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")
HANG_S = 600  # a hang limit, not an expectation: nothing waits this long when it works


class ListingOnly:
    """A session that lists ``tools`` and refuses every call: what the audit needs."""

    def __init__(self, tools: list[ToolDefinition]) -> None:
        self.tools = tools

    @property
    def shared_tools(self) -> list[ToolDefinition]:
        return self.tools

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        raise AssertionError(f"the audit called {name}")


@contextmanager
def catalogue_server(contract: str, docs: str = "default") -> Iterator[tuple[list[str], dict]]:
    """``limbo mcp`` serving every tool of the catalogue under ``contract``: its command line
    and the environment that carries the token."""
    tools = list(REGISTRY.catalog(contract, docs).tools.values())
    with SandboxServer() as sandbox, sandbox.episode(ListingOnly(tools)) as lease:
        command = [sys.executable, "-m", "limbo_plugin.server.mcp_server", "--url", lease.url]
        yield command, {**os.environ, TOKEN_ENV: lease.token}


def limbo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *args], env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=HANG_S)


def drive_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m limbo_plugin.realmcp.drive ARGS…`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "limbo_plugin.realmcp.drive", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=HANG_S)


def audit_json(command: list[str], env: dict[str, str] | None = None
               ) -> tuple[int, dict[str, Any]]:
    done = limbo("audit", "--json", "--", *command, env=env)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def real_server(name: str) -> str:
    """The pinned third-party server's executable, or skip saying how to install it."""
    path = SERVERS[name].installed()
    if path is None:
        pytest.skip(f"{name} MCP server not installed: python -m limbo_plugin.realmcp.servers "
                    f"install {name}")
    return str(path)


ADA = {"entities": [{"name": "Ada", "entityType": "person",
                     "observations": ["wrote the first program"]}]}
MEMORY_VERIFY = """\
tools:
  - tool: create_entities
    writes: true
    verify:
      tool: open_nodes
      args: {names: "{entities|attr:name}"}
      items: entities
      match: {name: "{item.name}"}
      per_item: entities
"""
"""server-memory's read-back of an entity, which the audit cannot build by argument names (the
audit proposes read_graph and leaves ``verify`` empty): the edit a user makes."""


def proxy_command(mode: str, log: Path, server: list[str], *extra: str) -> list[str]:
    return [sys.executable, "-m", "limbo_plugin.cli", "proxy", "--inject", mode, "--log",
            str(log), *extra, "--", *server]


def drive_policy(policy: str, command: list[str], steps: list[tuple[str, dict]],
                 config: Path | None = None, env: dict[str, str] | None = None) -> Any:
    import anyio

    from limbo_plugin.realmcp.config import load_config
    from limbo_plugin.realmcp.drive import drive
    from limbo_plugin.realmcp.upstream import Upstream

    upstream = Upstream(command=tuple(command), env=env)
    return anyio.run(drive, policy, upstream, steps, load_config(config))


def report_json(log: Path) -> dict[str, Any]:
    done = limbo("proxy", "report", str(log), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["tools"]


@contextmanager
def _loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a loopback port in a thread; yields ``http://127.0.0.1:PORT``. The
    socket listens once the server is built, so a client may connect at once."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class _Answering(BaseHTTPRequestHandler):
    """What the loopback endpoints share: a JSON answer, and no access log on stderr."""

    def answer(self, code: int, document: Any = None) -> None:
        body = b"" if document is None else json.dumps(document).encode()
        self.send_response(code)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def read_body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def http_refusing(status: int, path: str = "/mcp") -> Iterator[str]:
    """A loopback HTTP endpoint that answers every request to ``path`` with ``status`` (a JSON
    body that is no JSON-RPC message, as a bearer middleware sends) and any other path with 404;
    yields the URL of ``path``."""

    class Refusing(_Answering):
        def do_POST(self) -> None:
            self.read_body()
            code = status if self.path == path else 404
            self.answer(code, {"error": "refused", "status": code})

        do_GET = do_DELETE = do_POST

    with _loopback(Refusing) as base:
        yield base + path


STUB_TOOL = {"name": "echo", "description": "Answers with its arguments.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


@contextmanager
def mcp_stub(*, refuse: dict[str, int] | None = None, errors: dict[str, str] | None = None,
             token: str | None = None, drop: frozenset[str] = frozenset(),
             cut: dict[str, str] | None = None, seen: list[str] | None = None
             ) -> Iterator[str]:
    """A loopback streamable HTTP endpoint that speaks just enough MCP for a client to connect
    (the legacy ``initialize`` handshake), list one tool (``echo``) and call it: what a real
    server does up to the point a test wants it to refuse. A request whose method is in
    ``refuse`` is answered with that HTTP status instead (a token that expires mid-session, an
    endpoint that guards ``tools/list`` alone), one in ``errors`` with a JSON-RPC error of that
    message (a failure that is no refusal), one in ``drop`` by closing the connection without
    an answer, one in ``cut`` by starting an answer of that content type (``application/json``
    or ``text/event-stream``) and closing the connection half-way through it; ``seen`` collects
    the method of every POST; with ``token``, a POST without ``Authorization: Bearer TOKEN`` is
    answered 401."""
    refusing, failing, cutting = refuse or {}, errors or {}, cut or {}

    class Stub(_Answering):
        def do_POST(self) -> None:
            message = self.read_body()
            named = message.get("method") if isinstance(message, dict) else None
            method = named if isinstance(named, str) else ""  # "": in none of the tables
            if seen is not None and isinstance(named, str):
                seen.append(named)
            if method in drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if method in cutting:  # the headers and a part of the body, then nothing
                self.send_response(200)
                self.send_header("Content-Type", cutting[method])
                if cutting[method] == "application/json":
                    self.send_header("Content-Length", "4096")
                self.end_headers()
                self.wfile.write(b'{"jsonrpc": "2.0", "id": ' if cutting[method] ==
                                 "application/json" else b"event: message\ndata: {")
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if token is not None and self.headers.get("authorization") != f"Bearer {token}":
                self.answer(401, {"error": "invalid_token"})
            elif method in refusing:
                self.answer(refusing[method], {"error": "refused"})
            elif not isinstance(message, dict) or "id" not in message:
                self.answer(202)  # a notification
            elif method in failing:
                self.answer(200, {"jsonrpc": "2.0", "id": message["id"],
                                  "error": {"code": -32603, "message": failing[method]}})
            else:
                self.answer(200, {"jsonrpc": "2.0", "id": message["id"],
                                  **_stub_result(method, message.get("params") or {})})

        def do_GET(self) -> None:  # no server-initiated stream: allowed by the transport
            self.answer(405)

        do_DELETE = do_GET

    with _loopback(Stub) as base:
        yield base + "/mcp"


def _stub_result(method: str | None, params: dict[str, Any]) -> dict[str, Any]:
    """The stub's answer to one request: ``result`` or ``error`` (an unknown method, which is
    how the client's probe for a newer protocol learns to fall back to ``initialize``)."""
    if method == "initialize":
        return {"result": {"protocolVersion": params.get("protocolVersion"),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "stub", "version": "0"}}}
    if method == "tools/list":
        return {"result": {"tools": [STUB_TOOL]}}
    if method == "tools/call":
        text = json.dumps(params.get("arguments") or {})
        return {"result": {"content": [{"type": "text", "text": text}], "isError": False}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


@contextmanager
def nothing_listening() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: a connection to it is refused, and
    no other process can take the port while the test runs."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/mcp"
