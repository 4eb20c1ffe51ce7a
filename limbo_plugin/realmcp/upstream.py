"""Connecting to the MCP server a tool works on: a command Limbo starts (stdio) or a URL.

Every failure to start it, to complete the handshake, to list its tools or to make a call
becomes one :class:`UpstreamError` line naming the server and what went wrong, with the tail of
what the server wrote to stderr (that is usually where it says why). A URL has no stderr to read:
there the line names the HTTP status the endpoint refused the failing request with (the
handshake, or a request after it: a token may expire mid-session), or that nothing accepted the
connection, and what would fix it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import httpx2

CONNECT_TIMEOUT_S = 120.0
"""How long a request to the server may take before the connection counts as failed (npm
servers start slowly on a loaded machine: this is a hang limit, not an expectation)."""


DROPPED = 0
"""The status :class:`HttpAnswers` keeps for a POST whose connection closed after it was sent
and before an answer came: not a status the server chose, but as ambiguous as a 5xx (the
request may have run)."""


TOKEN_OPTION = "--header 'Authorization: Bearer …'"
"""How a user gives the endpoint its token (advice only: a token is never printed)."""


class UpstreamError(Exception):
    """The server could not be started, connected to or listed (one line): ``server: problem``.
    :attr:`problem` is the line without the server (its command or URL), for a message that
    should not show where the server is."""

    def __init__(self, server: str, problem: str, *, status: int | None = None) -> None:
        super().__init__(f"{server}: {problem}")
        self.problem = problem
        self.status = status
        """The HTTP status the endpoint refused the failing request with, if it did."""

    @property
    def ambiguous(self) -> bool:
        """Whether the request may have run: the endpoint answered a 5xx (it may have
        committed before failing), as opposed to a refusal before anything ran."""
        return self.status is not None and (self.status >= 500 or self.status == DROPPED)

    @property
    def dropped(self) -> bool:
        """Whether the connection closed with the request sent and no answer come."""
        return self.status == DROPPED


@dataclass
class HttpAnswers:
    """The HTTP error statuses the endpoint answered the client's POSTs with, counted.

    The SDK turns a refused POST into a JSON-RPC error of its own ("Server returned an error
    response", or "Not Found") and drops the status, which is what tells a missing token from a
    wrong path. A response hook on the SDK's HTTP client keeps it, so nothing depends on the
    wording of the SDK's messages and no second request is made to find out. A failure is
    explained only by a status recorded while the failing request ran: take :attr:`refused`
    before it and ask :meth:`first_since` after, so an earlier refusal (a probe the SDK fell
    back from) is never blamed for a later, unrelated failure.
    """

    refused: int = 0
    """How many POSTs the endpoint has refused so far (the mark :meth:`first_since` takes)."""
    recent: deque[int] = field(default_factory=lambda: deque(maxlen=16))
    """The latest refusals' statuses: bounded, as a long-lived proxy may see many."""

    async def record(self, response: httpx2.Response) -> None:
        """The hook: MCP messages travel by POST, so only a POST's refusal explains a failure
        (a GET for the optional event stream may be refused by servers that work)."""
        if response.extensions.get(DROPPED_EXTENSION):  # counted by :meth:`record_drop`
            return
        if response.request.method == "POST" and response.status_code >= 400:
            self.refused += 1
            self.recent.append(response.status_code)

    def record_drop(self) -> None:
        """A POST whose connection closed with no answer (:data:`DROPPED`)."""
        self.refused += 1
        self.recent.append(DROPPED)

    def first_since(self, mark: int) -> int | None:
        """The first status recorded after ``mark`` refusals (the earliest still kept when more
        came since), or None when the endpoint refused nothing since."""
        new = self.refused - mark
        if new <= 0:
            return None
        return self.recent[max(0, len(self.recent) - new)]


DROPPED_EXTENSION = "limbo_dropped"
"""Marks the stand-in answer :class:`DropAwareTransport` gives the SDK for a dropped POST."""


class DropAwareTransport:
    """An httpx transport around the real one that turns a POST whose connection closed after
    it was sent (no answer, or an answer cut off) into a stand-in HTTP 502 for the SDK, counted
    as :data:`DROPPED`.

    Without it the SDK's client lets the transport error escape its task group: the session
    ends, and a guard or proxy in front of it hangs or exits, where a real client would see one
    failed call whose outcome is unknown. A connection that could not be opened at all is left
    as it is (nothing was sent: the error says so). A JSON answer is read here whole, so a cut-off
    body is caught too; an event stream's cut is counted as it happens and left to the SDK,
    which ends that one request ("SSE stream ended without a response").
    """

    NOT_SENT: tuple[str, ...] = ("ConnectError", "ConnectTimeout", "PoolTimeout",
                                 "UnsupportedProtocol", "ProxyError")

    def __init__(self, inner: Any, answers: HttpAnswers) -> None:
        self.inner, self.answers = inner, answers

    async def handle_async_request(self, request: Any) -> Any:
        import httpx2

        if request.method != "POST":
            return await self.inner.handle_async_request(request)
        try:
            response = await self.inner.handle_async_request(request)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                response.stream = _counted_stream(response.stream, self.answers)
                return response
            body = await response.aread()
        except httpx2.TransportError as exc:
            if type(exc).__name__ in self.NOT_SENT:
                raise
            self.answers.record_drop()
            return httpx2.Response(502, request=request,
                                   headers={"content-type": "text/plain"},
                                   content=f"connection closed: {describe(exc)}".encode(),
                                   extensions={DROPPED_EXTENSION: True})
        return httpx2.Response(response.status_code, headers=response.headers, content=body,
                               request=request, extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> DropAwareTransport:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.inner.__aexit__(*exc_info)


def _counted_stream(inner: Any, answers: HttpAnswers) -> Any:
    """An event stream's body that counts a cut (:meth:`HttpAnswers.record_drop`) and passes
    it on (an ``httpx2.AsyncByteStream``, which the client checks for)."""
    import httpx2

    class CountedStream(_CountedStream, httpx2.AsyncByteStream):
        pass

    return CountedStream(inner, answers)


class _CountedStream:
    """:func:`_counted_stream`'s body."""

    def __init__(self, inner: Any, answers: HttpAnswers) -> None:
        self.inner, self.answers = inner, answers

    async def __aiter__(self) -> AsyncIterator[bytes]:
        import httpx2

        try:
            async for chunk in self.inner:
                yield chunk
        except httpx2.TransportError:
            self.answers.record_drop()
            raise

    async def aclose(self) -> None:
        await self.inner.aclose()


_OPEN: dict[int, HttpAnswers] = {}
"""The answers of each client :func:`connect` has open, by ``id``: the callers pass only the
SDK's client around (which is unhashable), and a request made on it reads them here."""


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
    """``--header 'Name: value'`` options as a dict; a malformed one is a :class:`ValueError`
    that does not quote it (without its colon, the name cannot be told from a token)."""
    headers: dict[str, str] = {}
    for number, value in enumerate(values, 1):
        name, sep, rest = value.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header number {number} is not 'Name: value' (not shown: it "
                             f"may hold a token)")
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
async def connect(upstream: Upstream, *, timeout_s: float = CONNECT_TIMEOUT_S,
                  callbacks: dict[str, Any] | None = None) -> AsyncIterator[Any]:
    """An initialised :class:`mcp.Client` on ``upstream`` (with the client ``callbacks`` given:
    a relay's); failures are :class:`UpstreamError`."""
    from mcp import Client

    answers = HttpAnswers()
    connected = False
    raised_by_caller: list[BaseException] = []
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            async with Client(_transport(upstream, errlog, answers),
                              read_timeout_seconds=timeout_s, **(callbacks or {})) as client:
                connected = True
                _OPEN[id(client)] = answers
                try:
                    yield client
                except Exception as exc:
                    if not _from_the_client(exc):
                        raised_by_caller.append(exc)
                    raise
                finally:
                    del _OPEN[id(client)]
        except Exception as exc:
            cause = innermost(exc)
            if isinstance(cause, UpstreamError):  # already one line, maybe grouped
                raise cause from None
            if raised_by_caller and cause is raised_by_caller[0]:
                raise cause from None  # the caller's own error (a config naming unknown tools)
            # a status explains a failed handshake only: once connected, a request that names
            # its own status does so through `requesting`
            status = None if connected else answers.first_since(0)
            raise UpstreamError(upstream.describe(),
                                _failure(upstream, exc, status, errlog)) from None


def _transport(upstream: Upstream, errlog: Any, answers: HttpAnswers) -> Any:
    if upstream.url:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

        # the SDK's client settings (create_mcp_http_client's), on a transport that survives
        # a dropped connection
        http = httpx2.AsyncClient(
            headers=upstream.headers or None,
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            transport=cast("httpx2.AsyncBaseTransport",
                           DropAwareTransport(httpx2.AsyncHTTPTransport(), answers)),
            event_hooks={"response": [answers.record]})
        return streamable_http_client(upstream.url, http_client=http)
    from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

    from limbo_plugin.realmcp.deep_answers import readable_answers

    env = {**get_default_environment(), **os.environ, **(upstream.env or {})}
    parameters = StdioServerParameters(command=upstream.command[0],
                                       args=list(upstream.command[1:]), env=env)
    return readable_answers(stdio_client(parameters, errlog=errlog))


async def list_tools(client: Any, upstream: Upstream) -> list[Any]:
    """Every tool the server lists (following pagination); a failure is one line."""
    async with requesting(client, upstream, "cannot list its tools"):
        result = await client.list_tools()
        tools = list(result.tools)
        while getattr(result, "next_cursor", None):
            result = await client.list_tools(cursor=result.next_cursor)
            tools.extend(result.tools)
    return tools


async def call_tool(client: Any, upstream: Upstream, name: str,
                    arguments: dict[str, Any]) -> Any:
    """The server's answer to one call (a tool's error answer included); a failure to get one
    is one line."""
    async with requesting(client, upstream, f"calling {name}"):
        return await client.call_tool(name, arguments)


@asynccontextmanager
async def requesting(client: Any, upstream: Upstream, doing: str) -> AsyncIterator[None]:
    """Requests to a connected server whose failure is one line, ``URL: doing: why``.

    Over HTTP ``why`` is the status the endpoint refused a POST with while they ran (a token
    that expired mid-session, an endpoint that guards some methods only), else the SDK's error.
    The requests run one at a time here (listing, then a policy's calls), so a refusal counted
    in between is theirs.
    """
    answers = _OPEN.get(id(client))
    mark = answers.refused if answers else 0
    try:
        yield
    except UpstreamError:
        raise
    except Exception as exc:
        status = answers.first_since(mark) if answers else None
        if status is None and _closed_unanswered(exc):
            status = DROPPED
        why = (describe(exc) if status is None
               else http_refusal(status, upstream.headers, exc, connected=True))
        raise UpstreamError(upstream.describe(), f"{doing}: {why}", status=status) from None


def _closed_unanswered(exc: BaseException) -> bool:
    """Whether the SDK gave up on the request because its connection closed with no answer (an
    event stream that ended first, a session whose transport went away): its JSON-RPC error
    code says so whatever its wording."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    cause = innermost(exc)
    return isinstance(cause, MCPError) and cause.error.code == CONNECTION_CLOSED


def _failure(upstream: Upstream, exc: BaseException, status: int | None, errlog: Any) -> str:
    """Why connecting failed: the HTTP status when the endpoint refused the handshake, a refused
    connection as such, else the SDK's error and the server's stderr."""
    if status is not None:
        return http_refusal(status, upstream.headers, exc)
    if upstream.url and _could_not_connect(exc):
        return (f"could not connect ({describe(exc)}); check the host and port in --url and "
                f"that the server is running")
    return f"{describe(exc)}{stderr_tail(errlog)}"


def http_refusal(status: int, headers: dict[str, str], exc: BaseException, *,
                 connected: bool = False) -> str:
    """One line for an endpoint that refused a request with ``status``: what it means for an
    MCP client and what fixes it. Whether an ``Authorization`` header was given decides the
    advice; its value is a secret and never appears. Once ``connected`` the path has answered,
    so a 404 there is the session the server ended, not a wrong path."""
    if status == DROPPED:
        return ("the connection closed after the request was sent and before an answer came: "
                "the server may or may not have run it")
    answered = f"answered HTTP {status} {_phrase(status)}".rstrip()
    if connected and status == HTTPStatus.NOT_FOUND:
        return (f"{answered}: the server no longer knows the session (it restarted or ended "
                f"it); run the command again")
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


_CLIENT_PACKAGES = ("mcp", "mcp_types", "httpx", "httpx2", "httpcore", "httpcore2", "anyio")


def _from_the_client(exc: BaseException) -> bool:
    """Whether ``exc``, raised in the caller's block, came from the MCP client or its transport
    (a request the block made directly): that is the server's failure, worded as one line here.
    Anything else the block raised is the caller's own, and reaches it unchanged."""
    cause = innermost(exc)
    return type(cause).__module__.split(".")[0] in _CLIENT_PACKAGES


def innermost(exc: BaseException) -> BaseException:
    """The single cause a group of task failures wraps (its first, if it holds several): the
    SDK's task groups wrap whatever a request or the caller's block raised."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """The innermost single cause of ``exc``, one line."""
    exc = innermost(exc)
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
