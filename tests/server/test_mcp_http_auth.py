"""The streamable-HTTP MCP endpoint serves the episode's agent and nobody else: every request
carries the episode's token, the ``Host`` names the loopback address it is bound to, and a host
other machines can reach is refused unless asked for (``--allow-remote``) — for ``limbo mcp`` as
for ``limbo guard`` and ``limbo proxy``.

The attack this shuts: another local process finds the port and calls ``db_insert_row`` inside
the agent's session; the insert would be graded as the agent's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from serverkit import http_client, in_episode, mcp_post

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.server.launch import mcp_http_server, mcp_launch, serving_http
from limbo_plugin.server.sandbox_http import shared_sandbox

pytest.importorskip("mcp")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "prober", "version": "0"}}}
INSERT = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "tickets_create",
                     "arguments": {"project": "OPS", "title": "[SEV1] injected",
                                   "description": "not the agent"}}}


def post(url: str, body: dict[str, Any], *, token: str | None = None,
         session: str | None = None, host: str | None = None
         ) -> tuple[int, dict[str, str], str]:
    """One raw JSON-RPC POST: status, headers (lower-case names) and body text."""
    headers: dict[str, str] = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if session is not None:
        headers["Mcp-Session-Id"] = session
    if host is not None:
        headers["Host"] = host
    return mcp_post(url, json.dumps(body).encode(), headers)


def test_a_request_without_the_episode_token_is_refused_and_reaches_nothing() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease, \
                mcp_http_server(lease.url, lease.token) as url:
            seen: dict[str, Any] = {}
            seen["no token"] = post(url, INITIALIZE)
            seen["wrong token"] = post(url, INITIALIZE, token=lease.token[:-1] + "x")
            status, headers, _ = post(url, INITIALIZE, token=lease.token)
            assert status == 200, status
            sid = headers["mcp-session-id"]
            post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 token=lease.token, session=sid)
            # another process that learnt the session id still needs the token
            seen["hijack"] = post(url, INSERT, session=sid)
            seen["hijack wrong"] = post(url, INSERT, session=sid, token="guess")
            seen["other host"] = post(url, INSERT, session=sid, token=lease.token,
                                      host=f"attacker.example:{urlsplit(url).port}")
            return seen

    seen, record = in_episode(body)
    for what, (status, headers, text) in seen.items():
        if what == "other host":
            assert status == 421, (what, status, text)
        else:
            assert status == 401, (what, status, text)
            assert headers["www-authenticate"].startswith("Bearer"), what
    assert record.trace == [], "a refused request reached the world"


def test_the_episode_token_as_a_bearer_header_isserved_http() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease, \
                mcp_http_server(lease.url, lease.token) as url:
            async def main() -> Any:
                async with http_client(url, lease.token) as client:
                    result = await client.call_tool("wait", {"seconds": 4})
                    return result.content[0].text, result.is_error

            return anyio.run(main)

    (text, is_error), record = in_episode(body)
    assert (text, is_error) == ('{"now":"2026-09-15T09:00:04Z","waited_s":4}', False)
    assert [e.tool for e in record.trace] == ["wait"]


def _limbo(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "limbo_plugin.cli", *argv],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "LIMBO_SANDBOX_TOKEN": "t"}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("command", "server"), [
    (["mcp", "--url", "http://127.0.0.1:9"], []),
    (["guard"], ["--", sys.executable, "-c", "pass"]),
    (["proxy", "--inject", "timeout_post"], ["--", sys.executable, "-c", "pass"]),
])
@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::"])
def test_a_host_other_machines_reach_is_refused_without_allow_remote(
        command: list[str], server: list[str], host: str) -> None:
    done = _limbo(*command, "--transport", "streamable-http", "--host", host, *server)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"--host {host} is not a loopback address" in lines[0]
    assert "--allow-remote" in lines[0]


@pytest.mark.parametrize(("command", "server"), [
    (["mcp", "--url", "http://127.0.0.1:9"], []),
    (["guard"], ["--", sys.executable, "-c", "pass"]),
    (["proxy", "--inject", "timeout_post"], ["--", sys.executable, "-c", "pass"]),
])
def test_a_port_out_of_range_is_one_line_before_anything_starts(
        command: list[str], server: list[str]) -> None:
    done = _limbo(*command, "--transport", "streamable-http", "--port", "70000", *server)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "argument --port: a port number from 0 to 65535 (0: a free one), got '70000'" in \
        lines[0]


def test_allow_remote_serves_every_interface_and_still_wants_the_token() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            launch = mcp_launch(lease.url, lease.token)
            argv = [*launch.argv, "--transport", "streamable-http", "--host", "0.0.0.0",
                    "--allow-remote"]
            with serving_http(argv, {**os.environ, **launch.env}, label="limbo mcp") as url:
                local = url.replace("0.0.0.0", "127.0.0.1")
                return url, post(local, INITIALIZE)[0], post(local, INITIALIZE,
                                                             token=lease.token)[0]

    (url, without, right), _ = in_episode(body)
    assert url.startswith("http://0.0.0.0:")
    assert (without, right) == (401, 200)


def test_an_unauthenticated_body_is_refused_before_it_is_read() -> None:
    """``limbo mcp`` over HTTP answers a client without the token before reading the body it
    announces (a deep-line check used to buffer up to a megabyte of it first)."""
    import socket

    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease, \
                mcp_http_server(lease.url, lease.token) as url:
            parts = urlsplit(url)
            with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
                sock.sendall(f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                             "Content-Type: application/json\r\nAccept: application/json, "
                             "text/event-stream\r\nContent-Length: 500000\r\n\r\n{".encode())
                return sock.recv(65536)  # with the old order: no answer until the timeout

    answer, record = in_episode(body)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert record.tool_calls == 0
