"""``limbo mcp --transport streamable-http`` announces its URL only once it accepts connections:
a client that connects the moment it reads the line is never refused, however slowly the server
goes on starting (a loaded machine)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from typing import Any

import anyio
import pytest
from serverkit import http_client, in_episode

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.server.launch import mcp_launch
from limbo_plugin.server.sandbox_http import shared_sandbox

pytest.importorskip("mcp")

ANNOUNCED = re.compile(r"serving streamable HTTP at http://([\d.]+):(\d+)(/\S*)")


def _announce_then_freeze(argv: list[str], env: dict[str, str]
                          ) -> tuple[subprocess.Popen[str], str, int, str]:
    """Start the server, read stderr up to the announcement and stop the process right there
    (SIGSTOP): whatever it had not done before announcing, it does not do until SIGCONT."""
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:  # the server exits on a fatal error, which ends this loop
        found = ANNOUNCED.search(line)
        if found:
            process.send_signal(signal.SIGSTOP)
            return process, found[1], int(found[2]), found[3]
    process.wait()
    pytest.fail(f"limbo mcp exited ({process.returncode}) without announcing its URL")


def test_the_announced_url_accepts_connections_at_once() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            launch = mcp_launch(lease.url, lease.token)
            argv = [*launch.argv, "--transport", "streamable-http", "--port", "0"]
            process, host, port, path = _announce_then_freeze(argv, {**os.environ, **launch.env})
            try:
                # Frozen right after the announcement, the server must already be listening:
                # the kernel completes the handshake and queues the connection.
                with socket.create_connection((host, port), timeout=60):
                    pass
                process.send_signal(signal.SIGCONT)

                async def main() -> Any:
                    async with http_client(f"http://{host}:{port}{path}",
                                           lease.token) as client:
                        return [t.name for t in (await client.list_tools()).tools]

                return anyio.run(main)
            finally:
                process.send_signal(signal.SIGCONT)
                process.terminate()
                process.wait(timeout=60)

    tools, _ = in_episode(body)
    assert "wait" in tools
