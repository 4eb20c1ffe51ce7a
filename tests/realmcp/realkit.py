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
def http_refusing(status: int, path: str = "/mcp") -> Iterator[str]:
    """A loopback HTTP endpoint that answers every request to ``path`` with ``status`` (a JSON
    body that is no JSON-RPC message, as a bearer middleware sends) and any other path with 404;
    yields the URL of ``path``. The socket listens once the server is built, so a client may
    connect at once."""

    class Refusing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            code = status if self.path == path else 404
            body = json.dumps({"error": "refused", "status": code}).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_DELETE = do_POST

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def nothing_listening() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: a connection to it is refused, and
    no other process can take the port while the test runs."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/mcp"
