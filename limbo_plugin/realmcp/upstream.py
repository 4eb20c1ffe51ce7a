"""Connecting to the MCP server a tool works on: a command Limbo starts (stdio) or a URL.

Every failure to start it, to complete the handshake or to list its tools becomes one
:class:`UpstreamError` line naming the server and what went wrong, with the tail of what the
server wrote to stderr (that is usually where it says why).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

CONNECT_TIMEOUT_S = 120.0
"""How long a request to the server may take before the connection counts as failed (npm
servers start slowly on a loaded machine: this is a hang limit, not an expectation)."""


class UpstreamError(Exception):
    """The server could not be started, connected to or listed (one line)."""


@dataclass(frozen=True)
class Upstream:
    """Where the server is: ``command`` (stdio) or ``url`` (streamable HTTP) with ``headers``."""

    command: tuple[str, ...] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] | None = None

    def describe(self) -> str:
        return self.url or " ".join(self.command)

    def server_fields(self) -> dict[str, Any]:
        if self.url:
            return {"transport": "streamable-http", "url": self.url}
        return {"transport": "stdio", "command": list(self.command)}


def parse_headers(values: Sequence[str]) -> dict[str, str]:
    """``--header 'Name: value'`` options as a dict; a malformed one is a :class:`ValueError`."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header {value!r} is not 'Name: value'")
        headers[name.strip()] = rest.strip()
    return headers


def upstream_from_args(command: Sequence[str], url: str | None,
                       headers: Sequence[str]) -> Upstream:
    """The upstream named on a command line (exactly one of a command and ``--url``)."""
    if url and command:
        raise ValueError("give either --url URL or -- COMMAND ARGS…, not both")
    if url:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"--url must be an http(s) URL, got {url!r}")
        return Upstream(url=url, headers=parse_headers(headers))
    if not command:
        raise ValueError("no server: give -- COMMAND ARGS… (a stdio server) or --url URL")
    if headers:
        raise ValueError("--header applies to --url only")
    if shutil.which(command[0]) is None and not os.path.isfile(command[0]):
        raise ValueError(f"cannot start the server: {command[0]!r} is not a program on PATH")
    return Upstream(command=tuple(command))


@asynccontextmanager
async def connect(upstream: Upstream, *, timeout_s: float = CONNECT_TIMEOUT_S
                  ) -> AsyncIterator[Any]:
    """An initialised :class:`mcp.Client` on ``upstream``; failures are :class:`UpstreamError`."""
    from mcp import Client

    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with Client(_transport(upstream, errlog),
                              read_timeout_seconds=timeout_s) as client:
                yield client
        except UpstreamError:
            raise
        except Exception as exc:
            raise UpstreamError(f"{upstream.describe()}: {describe(exc)}"
                                f"{stderr_tail(errlog)}") from None


def _transport(upstream: Upstream, errlog: Any) -> Any:
    if upstream.url:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=upstream.headers or None)
        return streamable_http_client(upstream.url, http_client=http)
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    env = {**get_default_environment(), **os.environ, **(upstream.env or {})}
    parameters = StdioServerParameters(command=upstream.command[0],
                                       args=list(upstream.command[1:]), env=env)
    return stdio_client(parameters, errlog=errlog)


async def list_tools(client: Any, upstream: Upstream) -> list[Any]:
    """Every tool the server lists (following pagination); a failure is one line."""
    try:
        result = await client.list_tools()
        tools = list(result.tools)
        while getattr(result, "next_cursor", None):
            result = await client.list_tools(cursor=result.next_cursor)
            tools.extend(result.tools)
    except Exception as exc:
        raise UpstreamError(f"{upstream.describe()}: cannot list its tools: "
                            f"{describe(exc)}") from None
    return tools


def describe(exc: BaseException) -> str:
    """The innermost single cause of ``exc``, one line."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def stderr_tail(errlog: Any, limit: int = 300) -> str:
    try:
        errlog.flush()
        errlog.seek(0)
        lines = [line.strip() for line in errlog.read().splitlines() if line.strip()]
    except (OSError, ValueError):
        return ""
    if not lines:
        return ""
    text = " / ".join(lines[-3:])
    return f" (server stderr: {text[-limit:]})"
