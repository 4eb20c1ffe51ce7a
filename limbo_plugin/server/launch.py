"""How a client launches ``limbo mcp`` for one episode: command, arguments and environment.

Harnesses start their MCP servers with a filtered environment (Codex passes a short allow-list,
the SDK's stdio client another), so nothing can be left to inheritance: the command is this
interpreter (not whatever ``limbo`` is first on ``PATH``), ``PYTHONPATH`` names the directory this
copy of ``limbo_plugin`` was imported from, and the token travels in the environment, where
``ps`` does not show it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbo_plugin.processes import stop
from limbo_plugin.server.wire import SERVER_NAME, TOKEN_ENV, URL_ENV

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
"""The directory holding the ``limbo_plugin`` package that is running now."""


@dataclass(frozen=True)
class McpLaunch:
    """Everything a harness's MCP configuration needs to start the episode's server."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    name: str = SERVER_NAME

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args]


def mcp_launch(url: str, token: str) -> McpLaunch:
    """The stdio MCP server for the episode at ``url`` with bearer ``token``."""
    inherited = os.environ.get("PYTHONPATH")
    python_path = PACKAGE_ROOT if not inherited else f"{PACKAGE_ROOT}{os.pathsep}{inherited}"
    return McpLaunch(
        command=sys.executable,
        args=("-m", "limbo_plugin.server.mcp_server", "--url", url),
        env={TOKEN_ENV: token, URL_ENV: url, "PYTHONPATH": python_path,
             "PYTHONUNBUFFERED": "1"},
    )


def episode_launch(url: str, token: str) -> McpLaunch:
    """How an episode starts its ``limbo mcp`` stdio server: through this worker's fork server
    (:mod:`limbo_plugin.server.mcp_fork`), which has the SDK imported already, so an episode
    costs tens of milliseconds, not the half second of a fresh ``limbo mcp``; where there is no
    ``fork`` or no descriptor passing (Windows), as a fresh ``limbo mcp``. The server a client
    gets is the same either way: the forked child runs ``limbo mcp``'s own code on the client's
    own stdio pipes."""
    import socket

    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return mcp_launch(url, token)
    from limbo_plugin.server.mcp_fork import shared_fork_server

    return shared_fork_server().launch(url, token)


@contextmanager
def mcp_http_server(url: str, token: str, *, host: str = "127.0.0.1",
                    startup_timeout_s: float = 300.0) -> Iterator[str]:
    """Run ``limbo mcp --transport streamable-http`` for one episode; yield its MCP URL.

    For agents that take an MCP server by URL rather than by command. The server picks a free
    port and announces its URL on stderr, which is read here; it is stopped on exit.
    """
    launch = mcp_launch(url, token)
    argv = [*launch.argv, "--transport", "streamable-http", "--host", host, "--port", "0"]
    with serving_http(argv, {**os.environ, **launch.env}, label="limbo mcp",
                      startup_timeout_s=startup_timeout_s) as served:
        yield served


@contextmanager
def serving_http(argv: list[str], env: dict[str, str], *, label: str,
                 startup_timeout_s: float = 300.0) -> Iterator[str]:
    """Run ``argv``, a Limbo server on streamable HTTP (``limbo mcp``, ``proxy`` or ``guard``
    with ``--transport streamable-http``), until the block ends; yield the URL it announces on
    stderr once it listens. Its stderr is read on after that, so it never blocks on a full
    pipe; ``label`` names it if it does not start."""
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        found = _announced_url(process, startup_timeout_s, label)
        threading.Thread(target=_drain, args=(process.stderr,), daemon=True).start()
        yield found
    finally:
        stop(process)


def _announced_url(process: subprocess.Popen[str], timeout_s: float, label: str) -> str:
    assert process.stderr is not None
    lines: list[str] = []
    result: list[str] = []

    def read() -> None:
        for line in process.stderr:  # type: ignore[union-attr]
            lines.append(line)
            match = re.search(r"serving streamable HTTP at (\S+)", line)
            if match:
                result.append(match.group(1))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not result:
        tail = " ".join(line.strip() for line in lines[-3:])
        raise RuntimeError(f"{label} (streamable HTTP) did not start: {tail or 'no output'}")
    return result[0]


def _drain(stream: Any) -> None:
    for _ in stream:
        pass
