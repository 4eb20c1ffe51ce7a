"""Helpers of the harness-path tests: run code inside a real episode, and talk HTTP to the
sandbox service the way ``limbo mcp`` does."""

from __future__ import annotations

import http.client
import json
import os
import select
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.launch import McpLaunch
from limbo_plugin.spec.registry import SpecRegistry

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
LATE = EpisodeKey(template="release_announcement", instance=0, focal_write="email",
                  fault_mode="timeout_late")


class Probe:
    """An agent that runs ``body(session)`` and keeps what it returns: a real episode (world,
    fault, condition, trace) with the test in the agent's seat."""

    name = "probe"

    def __init__(self, body: Callable[[AgentSession], Any]) -> None:
        self.body = body
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self, session: AgentSession) -> None:
        try:
            self.result = self.body(session)
        except Exception as error:
            self.error = error  # the episode records a crashed agent; the test must fail
            raise


def in_episode(body: Callable[[AgentSession], Any], key: EpisodeKey = LOST_ACK,
               config: RunConfig | None = None) -> tuple[Any, EpisodeRecord]:
    """Run ``body`` as the agent of one episode; its result and the episode's record. What
    ``body`` raises (a failed assertion inside it) is raised here, not left as the record's
    crashed agent."""
    probe = Probe(body)
    record = run_episode(key, config or RunConfig(), agent=probe, registry=REGISTRY)
    if probe.error is not None:
        raise probe.error
    return probe.result, record


def connect(url: str, *, timeout: float) -> http.client.HTTPConnection:
    """A connection (not yet opened) to ``url``'s host and port."""
    parts = urlsplit(url)
    assert parts.hostname is not None, url
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def request(url: str, method: str, path: str, *, token: str | None = None,
            body: Any = None, raw: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """One request on a fresh connection; the JSON body of the answer (every answer has one)."""
    conn = connect(url, timeout=30)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def mcp_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    """One raw JSON-RPC POST to a streamable-HTTP MCP endpoint, as a client sends it (with the
    ``Accept`` the transport requires): status, headers (lower-case names) and body text."""
    parts = urlsplit(url)
    conn = connect(url, timeout=60)
    try:
        conn.request("POST", parts.path, body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            **headers})
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read().decode())
    finally:
        conn.close()


def http_client(url: str, token: str, read_timeout_seconds: float = 60) -> Any:
    """An SDK :class:`mcp.Client` for ``limbo mcp``'s streamable-HTTP endpoint, sending the
    episode's token as ``Authorization: Bearer`` (the endpoint refuses requests without it)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http),
                  read_timeout_seconds=read_timeout_seconds)


def raw_line(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as a stdio line."""
    return (json.dumps(message) + "\n").encode()


def raw_session(launch: McpLaunch, requests: list[bytes], expect_ids: set[int], *,
                in_turn: bool = False) -> dict[int, Any]:
    """A raw JSON-RPC peer of a fresh stdio ``limbo mcp``: handshake as a 2025-06-18 client,
    send ``requests``, collect replies by (integer) id until those of ``expect_ids`` are in.
    ``in_turn``: each request only once the one before it is answered, as a harness waits for
    a tool's result (the server answers requests concurrently, so requests sent at once may
    reach the episode in another order). Fails on a dead server or a hang (300 s, a hang guard,
    not a speed check), naming the replies still missing and the end of the server's stderr."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(launch.argv, env={**os.environ, **launch.env},
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors)
        try:
            return _exchange(process, requests, expect_ids, in_turn, errors)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _exchange(process: subprocess.Popen[bytes], requests: list[bytes], expect_ids: set[int],
              in_turn: bool, errors: Any) -> dict[int, Any]:
    assert process.stdin is not None and process.stdout is not None
    replies: dict[int, Any] = {}

    def stuck(what: str) -> str:
        errors.seek(0)
        tail = errors.read()[-2000:].decode("utf-8", "replace")
        return (f"the MCP server {what}; awaited and missing: {sorted(expect_ids - set(replies))}"
                f", replies so far: {sorted(replies)}; its stderr ends: {tail!r}")

    process.stdin.write(raw_line({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                  "params": {"protocolVersion": "2025-06-18",
                                             "capabilities": {},
                                             "clientInfo": {"name": "raw-test", "version": "0"}}}))
    process.stdin.write(raw_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    process.stdin.flush()
    waiting = list(reversed(requests))
    deadline = time.monotonic() + 300
    lines = _Lines(process.stdout.fileno())
    while not expect_ids <= set(replies):
        line = lines.next(deadline)
        assert line is not None, stuck("hung")
        assert line, stuck("closed its output")
        message = json.loads(line)
        if isinstance(message.get("id"), int):
            replies[message["id"]] = message
            while waiting:
                process.stdin.write(waiting.pop())
                if in_turn:
                    break
            process.stdin.flush()
    assert process.poll() is None, stuck("ended")  # still running after all of that
    return replies


class _Lines:
    """Lines read from a pipe's descriptor, with a deadline. Read with ``os.read`` into a buffer
    of its own: ``select`` on a buffered file says nothing of the lines its buffer already
    holds, so a reply read along with the one before it would wait for ever."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = b""

    def next(self, deadline: float) -> bytes | None:
        """The next line (without its end); ``b""`` at end of file, ``None`` at the deadline."""
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._fd], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                return b""
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line


def over_stdio(launch: McpLaunch, work: Callable[[Any], Any]) -> Any:
    """Run ``await work(client)`` with the SDK's :class:`mcp.Client` on the stdio server that
    ``launch`` starts (a fresh ``limbo mcp``, or one forked by the fork server)."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> Any:
        parameters = StdioServerParameters(command=launch.command, args=list(launch.args),
                                           env=launch.env)
        async with Client(stdio_client(parameters), read_timeout_seconds=60) as client:
            return await work(client)

    return anyio.run(main)
