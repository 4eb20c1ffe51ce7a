"""The MCP fork server: ``mcp:<policy>`` episodes of one worker share one process that imported
the SDK, while each episode still gets its own ``limbo mcp`` process, session and token on real
stdio pipes. A token of another episode is refused, a broken request does not stop the server,
and the server ends when the worker that started it is gone."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import Any

import pytest
from serverkit import LOST_ACK, REGISTRY, in_episode, over_stdio

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.episode import run_episode
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server import mcp_fork
from limbo_plugin.server.mcp_fork import McpForkServer, shared_fork_server
from limbo_plugin.server.sandbox_http import shared_sandbox

pytestmark = pytest.mark.skipif(not hasattr(socket, "send_fds"), reason="needs fd passing")


def test_mcp_episodes_share_one_fork_server_and_match_the_scripted_records() -> None:
    first = run_episode(LOST_ACK, RunConfig(agent="mcp:blind_retry"), registry=REGISTRY)
    server = shared_fork_server()
    second = run_episode(LOST_ACK, RunConfig(agent="mcp:blind_retry"), registry=REGISTRY)
    assert shared_fork_server() is server and server.alive  # started once, still serving
    local = run_episode(LOST_ACK, RunConfig(agent="scripted:blind_retry"), registry=REGISTRY)
    ignored = {"agent", "test_id"}
    for remote in (first, second):
        assert remote.error is None, remote.error
        assert remote.model_dump(exclude=ignored) == local.model_dump(exclude=ignored)
    assert local.duplicates == 1  # a lost ack blind-retried: the equality is not trivial


def test_each_episode_is_served_with_its_own_token() -> None:
    from mcp.shared.exceptions import MCPError

    server = shared_fork_server()
    tokens: list[str] = []

    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            tokens.append(lease.token)

            async def work(client: Any) -> Any:
                listed = (await client.list_tools()).tools
                result = await client.call_tool("wait", {"seconds": 1})
                return len(listed), result.is_error

            return over_stdio(server.launch(lease.url, lease.token), work)

    (listed, is_error), record = in_episode(body)
    assert listed > 0 and is_error is False
    assert record.tool_calls == 1  # the call reached this episode's world

    def stale(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            async def work(client: Any) -> Any:
                with pytest.raises(MCPError) as refused:
                    await client.list_tools()
                return str(refused.value)

            return over_stdio(server.launch(lease.url, tokens[0]), work)

    message, record = in_episode(stale)
    assert "401" in message  # the earlier episode's token opens nothing
    assert record.tool_calls == 0


def test_a_broken_request_is_dropped_and_the_server_keeps_serving() -> None:
    server = shared_fork_server()
    for payload, fds in ((b"one line", [0, 1, 2]), (b"x\ny\nz", [0, 1, 2]),
                         (b"\xff\n\xfe", [0, 1, 2]), (b"x\ny", [0])):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(server.socket_path)
            socket.send_fds(connection, [payload], fds)
            connection.shutdown(socket.SHUT_WR)
            connection.settimeout(60)
            assert connection.recv(1) == b""  # closed without serving anything
    assert server.alive
    record = run_episode(LOST_ACK, RunConfig(agent="mcp:verify_first"), registry=REGISTRY)
    assert record.error is None and record.eos


def test_the_socket_is_private_and_the_token_is_not_on_the_command_line() -> None:
    server = shared_fork_server()
    assert os.stat(server.directory).st_mode & 0o077 == 0
    launch = server.launch("http://127.0.0.1:9", "secret-token-value")
    assert "secret-token-value" not in " ".join(launch.argv)


def test_the_fork_server_ends_when_its_worker_is_gone() -> None:
    server = McpForkServer()
    try:
        assert server.alive
        assert server.process.stdin is not None
        server.process.stdin.close()  # what the worker's death does to the pipe
        try:
            server.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the fork server outlived its worker")
        assert not os.path.exists(server.socket_path) or not server.alive
    finally:
        server.close()
    assert not server.directory.exists()


def test_a_dead_fork_server_is_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    server = shared_fork_server()
    server.process.kill()
    server.process.wait(timeout=60)
    deadline = time.monotonic() + 60
    while server.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    record = run_episode(LOST_ACK, RunConfig(agent="mcp:verify_first"), registry=REGISTRY)
    assert record.error is None, record.error
    assert mcp_fork._SHARED is not server and mcp_fork._SHARED is not None
