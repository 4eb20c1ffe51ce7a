"""Requests nested deeper than the MCP SDK's JSON parser reads (a stdio line, an HTTP body),
made readable so that they are still answered.

The SDK parses each stdio line with pydantic's JSON parser, which gives up past about 200
levels of nesting; such a line is dropped unanswered, and a client that awaits its id waits
forever (over HTTP, the SDK answers a parse error that no episode records). An agent can send
one: a tool's arguments nested 600 levels deep. In process, the episode answers those
arguments with a tool error (they nest more than :data:`~limbo_plugin.toolapi.
MAX_ARGUMENT_DEPTH` levels) and records them cut at that depth.

So before the SDK reads a line, every container nested deeper than :data:`LINE_DEPTH` is
emptied, and then, by the server:

- ``limbo mcp`` (*empty*) reads the emptied line. The arguments of a call that this changes
  nest more than :data:`~limbo_plugin.toolapi.MAX_ARGUMENT_DEPTH` levels either way: the
  episode refuses them with the same error and records the same rendering, which never shows
  that depth. A tool *name* nested that deep (not a string, so no tool) is recorded with its
  nesting cut at that depth, where its ``repr``'s first characters show it;
- ``limbo proxy`` and ``limbo guard`` (*refuse*) must not forward the emptied call, another
  than the one made, to a real server. A request is answered with a JSON-RPC error of its own
  id instead (:func:`refuse_unreadable`), and nothing is forwarded.

Over HTTP, :class:`ReadableBodies` does the same to a request's body.

A line that is not JSON is passed on as it came, for the SDK to drop as before.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from io import TextIOWrapper
from typing import Any

import pydantic_core

from limbo_plugin.toolapi import JSON_TEXT_TOKEN

LINE_DEPTH = 128
"""The deepest nesting a line keeps: well within the SDK parser's limit (about 200), and far
beyond :data:`~limbo_plugin.toolapi.MAX_ARGUMENT_DEPTH` at the depth where a call's arguments
begin (3: message, ``params``, ``arguments``)."""

_OPENERS = "[{"


UNREADABLE = "limbo/unreadable"
"""The ``_meta`` key of a request put in place of one too deep to read (*refuse*): what it says
is the error :func:`refuse_unreadable` answers."""


def readable_line(line: str, limit: int = LINE_DEPTH, *, empty: bool = True) -> str:
    """``line`` itself, or, when it nests deeper than the SDK parser reads, what to read in its
    place: with ``empty``, ``line`` with every container deeper than ``limit`` emptied;
    without, a request of the same id and method that :func:`refuse_unreadable` refuses (a
    line that is no request is left for the SDK to drop). Only a line with more than ``limit``
    brackets can nest that deep, and counting them is cheap; only then is it parsed to see."""
    if line.count("[") + line.count("{") <= limit:
        return line
    try:
        pydantic_core.from_json(line)
    except ValueError as error:
        if "recursion limit" not in str(error):
            return line  # not JSON: the SDK drops it, as it would have
    else:
        return line
    cut = emptied_below(line, limit)
    try:
        message = pydantic_core.from_json(cut)
    except ValueError:
        return line
    if empty:
        return cut
    return _refused_request(message) or line


def _refused_request(message: Any) -> str | None:
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    request_id = reply_id(message)
    if request_id is None:
        return None  # a notification: nothing to answer
    problem = (f"the request nests more than {LINE_DEPTH} levels deep, deeper than this server's"
               " MCP parser reads; it was not forwarded")
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": message["method"],
                       "params": {"_meta": {UNREADABLE: problem}}}) + "\n"


def reply_id(message: Mapping[str, Any]) -> int | str | None:
    """The id of a JSON-RPC message that a reply can carry (an integer or a string), or
    ``None``: a notification, or an id no reply could name."""
    found = message.get("id")
    return found if isinstance(found, int | str) and not isinstance(found, bool) else None


async def refuse_unreadable(ctx: Any, call_next: Any) -> Any:
    """Server middleware: the request :func:`readable_line` put in place of one too deep to
    read is answered with an ``Invalid Request`` error (``-32600``) saying so, before any
    handler (or the SDK's check of its params) sees it."""
    params = ctx.params
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    if isinstance(meta, Mapping) and UNREADABLE in meta:
        from mcp.shared.exceptions import MCPError
        from mcp_types.jsonrpc import INVALID_REQUEST

        raise MCPError(INVALID_REQUEST, str(meta[UNREADABLE]))
    return await call_next(ctx)


def emptied_below(text: str, limit: int) -> str:
    """``text`` with each container that opens deeper than ``limit`` replaced by an empty one
    of its kind (``[]`` or ``{}``). Brackets inside strings are left alone."""
    kept: list[str] = []
    depth = 0
    resume = 0  # where the text after the last emptied container starts
    emptied_at = 0  # the depth of the container being emptied, or 0
    for token in JSON_TEXT_TOKEN.finditer(text):
        bracket = token.group()
        if bracket[0] == '"':
            continue
        if bracket in _OPENERS:
            depth += 1
            if depth > limit and not emptied_at:
                kept.append(text[resume:token.start()])
                kept.append("[]" if bracket == "[" else "{}")
                emptied_at = depth
            continue
        if emptied_at and depth == emptied_at:
            resume = token.end()
            emptied_at = 0
        depth -= 1
    if emptied_at:
        return text  # unbalanced: not JSON, left as it came
    kept.append(text[resume:])
    return "".join(kept)


class ReadableLines:
    """Lines of a text stream as :func:`readable_line` makes them (``empty`` or not): what the
    SDK's stdio server iterates in place of the process's standard input."""

    def __init__(self, source: Any, *, empty: bool) -> None:
        self._source = source
        self._empty = empty

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            yield readable_line(line, empty=self._empty)


@contextmanager
def claimed_stdin(*, empty: bool) -> Iterator[ReadableLines]:
    """The process's standard input as :class:`ReadableLines`, with descriptor 0 pointed at the
    null device meanwhile (as the SDK does when it reads standard input itself): a handler or
    a child process that reads it gets end of file, never a client's message."""
    import anyio

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # Never closed: a reader thread may still be blocked in it when the server stops, and
    # closing a buffered reader waits for its lock. It does not own ``wire`` (closefd=False).
    raw = open(wire, "rb", closefd=False)  # noqa: SIM115
    text = TextIOWrapper(raw, encoding="utf-8", errors="replace")
    try:
        yield ReadableLines(anyio.wrap_file(text), empty=empty)
    finally:
        os.dup2(wire, 0)
        os.close(wire)


READ_BODY_BYTES = 1_000_000
"""The largest HTTP body read here to be made readable: it is read before the SDK checks the
bearer token, so a request that may be anyone's costs this much memory at most. A deeper body
than that gets the SDK's own answer, a JSON-RPC parse error (HTTP 400)."""


def bearer_given(scope: Any, bearer: bytes | None) -> bool:
    """Whether an ASGI request carries ``Authorization: <bearer>`` (compared in constant time;
    always, when the endpoint has no token)."""
    if bearer is None:
        return True
    given = next((value for name, value in scope.get("headers", ())
                  if name.lower() == b"authorization"), b"")
    return hmac.compare_digest(given, bearer)


class ReadableBodies:
    """ASGI middleware: the body of a POST, as :func:`readable_line` makes it (``empty`` or
    not), for a streamable-HTTP endpoint, where the SDK would answer a body nested past its
    parser's limit with a parse error of no id, which no episode records. Bodies with a
    ``Content-Length`` of at most :data:`READ_BODY_BYTES`; others pass untouched."""

    def __init__(self, app: Any, *, empty: bool, token: str | None = None) -> None:
        self.app = app
        self.empty = empty
        self.bearer = f"Bearer {token}".encode() if token else None

    def _authorized(self, scope: Any) -> bool:
        """Whether the request carries the endpoint's token (always, without one): a body is
        read only for a client that may send one, so an unauthenticated connection costs no
        buffer and the app's own bearer check refuses it before any byte of it is read."""
        return bearer_given(scope, self.bearer)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        length = _content_length(scope) if scope["type"] == "http" else None
        if (scope.get("method") != "POST" or length is None or length > READ_BODY_BYTES
                or not self._authorized(scope)):
            await self.app(scope, receive, send)
            return
        read = await read_body(receive)
        if read is None:  # the client left: nothing to answer
            return
        body, more = read
        readable = body if more else _readable_body(body, self.empty)  # more: longer than said
        if readable is not body:
            headers = [(name, value) for name, value in scope["headers"]
                       if name.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers,
                                          (b"content-length", str(len(readable)).encode())]}
        await self.app(scope, replayed(readable, more, receive), send)


async def read_body(receive: Any) -> tuple[bytes, bool] | None:
    """An ASGI request's body, up to just past :data:`READ_BODY_BYTES`, and whether more of it
    is left unread; None when the client left before sending it."""
    body, more = b"", True
    while more and len(body) <= READ_BODY_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body, more


def replayed(body: bytes, more: bool, receive: Any) -> Any:
    """``receive`` giving back first the body already read (then the rest, if any)."""
    done = False

    async def replay() -> Any:
        nonlocal done
        if done:
            return await receive()
        done = True
        return {"type": "http.request", "body": body, "more_body": more}

    return replay


def _content_length(scope: Any) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _readable_body(body: bytes, empty: bool) -> bytes:
    """``body`` itself, or, when it is UTF-8 nested past the SDK parser's limit, its
    readable form."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return body
    readable = readable_line(text, empty=empty)
    return body if readable is text else readable.encode("utf-8")
