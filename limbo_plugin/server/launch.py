"""How a client launches ``limbo mcp`` for one episode: command, arguments and environment.

Harnesses start their MCP servers with a filtered environment (Codex passes a short allow-list,
the SDK's stdio client another), so nothing can be left to inheritance: the command is this
interpreter (not whatever ``limbo`` is first on ``PATH``), ``PYTHONPATH`` names the directory this
copy of ``limbo_plugin`` was imported from, and the token travels in the environment, where
``ps`` does not show it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

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
