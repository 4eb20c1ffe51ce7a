"""Connecting to the MCP server a tool works on: a command Limbo starts (stdio) or a URL.

Every failure to start it, to complete the handshake or to list its tools becomes one
:class:`UpstreamError` line naming the server and what went wrong, with the tail of what the
server wrote to stderr (that is usually where it says why). A URL has no stderr to read: there
the line names the HTTP status the endpoint answered the handshake with, or that nothing accepted
the connection, and what would fix it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx2

CONNECT_TIMEOUT_S = 120.0
"""How long a request to the server may take before the connection counts as failed (npm
servers start slowly on a loaded machine: this is a hang limit, not an expectation)."""


TOKEN_OPTION = "--header 'Authorization: Bearer …'"
"""How a user gives the endpoint its token (advice only: a token is never printed)."""


class UpstreamError(Exception):
    """The server could not be started, connected to or listed (one line)."""


@dataclass
class HttpAnswers:
    """The first HTTP error status the endpoint answered one of the client's POSTs with.

    The SDK turns a refused POST into a JSON-RPC error of its own ("Server returned an error
    response", or "Not Found") and drops the status, which is what tells a missing token from a
    wrong path. A response hook on the SDK's HTTP client keeps it, so nothing depends on the
    wording of the SDK's messages and no second request is made to find out.
    """

    status: int | None = None

    async def record(self, response: httpx2.Response) -> None:
        """The hook: MCP messages travel by POST, so only a POST's refusal explains a failure
        (a GET for the optional event stream may be refused by servers that work)."""
        if (self.status is None and response.request.method == "POST"
                and response.status_code >= 400):
            self.status = response.status_code


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

    answers = HttpAnswers()
    connected = False
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with Client(_transport(upstream, errlog, answers),
                              read_timeout_seconds=timeout_s) as client:
                connected = True
                yield client
        except UpstreamError:
            raise
        except Exception as exc:
            # a status explains a failed handshake only: once connected, a refused tool call
            # says nothing about why something later went wrong
            status = None if connected else answers.status
            raise UpstreamError(f"{upstream.describe()}: "
                                f"{_failure(upstream, exc, status, errlog)}") from None


def _transport(upstream: Upstream, errlog: Any, answers: HttpAnswers) -> Any:
    if upstream.url:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=upstream.headers or None)
        http.event_hooks["response"].append(answers.record)
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


def _failure(upstream: Upstream, exc: BaseException, status: int | None, errlog: Any) -> str:
    """Why connecting failed: the HTTP status when the endpoint refused the handshake, a refused
    connection as such, else the SDK's error and the server's stderr."""
    if status is not None:
        return http_refusal(status, upstream.headers, exc)
    if upstream.url and _could_not_connect(exc):
        return (f"could not connect ({describe(exc)}); check the host and port in --url and "
                f"that the server is running")
    return f"{describe(exc)}{stderr_tail(errlog)}"


def http_refusal(status: int, headers: dict[str, str], exc: BaseException) -> str:
    """One line for an endpoint that answered the handshake with ``status``: what it means for
    an MCP client and what fixes it. Whether an ``Authorization`` header was given decides the
    advice; its value is a secret and never appears."""
    answered = f"answered HTTP {status} {_phrase(status)}".rstrip()
    with_token = any(name.lower() == "authorization" for name in headers)
    if status == HTTPStatus.UNAUTHORIZED:
        if with_token:
            return (f"{answered}: it refused the Authorization header given; check the token "
                    f"(mistyped, expired or for another server)")
        return f"{answered}: it wants a token; pass it with {TOKEN_OPTION}"
    if status == HTTPStatus.FORBIDDEN:
        if with_token:
            return f"{answered}: the token given may not use this endpoint; check its permissions"
        return f"{answered}; if it wants a token, pass it with {TOKEN_OPTION}"
    if status in (HTTPStatus.NOT_FOUND, HTTPStatus.METHOD_NOT_ALLOWED):
        return (f"{answered}: no MCP endpoint at that path; check the path in --url "
                f"(streamable HTTP servers often serve it at /mcp)")
    return f"{answered} ({describe(exc)})"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _could_not_connect(exc: BaseException) -> bool:
    """Whether ``exc`` is, or groups, httpx's failure to open a connection at all (refused, or
    a name that does not resolve): no HTTP status to name then."""
    import httpx2

    if isinstance(exc, BaseExceptionGroup):
        return any(_could_not_connect(inner) for inner in exc.exceptions)
    return isinstance(exc, httpx2.ConnectError)


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
