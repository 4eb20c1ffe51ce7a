"""An upstream server's answer nested deeper than the MCP SDK reads: an error of its id at once.

The SDK's stdio client parses each line a server writes with pydantic's JSON parser, which
gives up past about 200 levels of nesting. It then hands the session the parse error in place
of the answer, and the request awaiting that answer waits out the client's read timeout (two
minutes, :data:`~limbo_plugin.realmcp.upstream.CONNECT_TIMEOUT_S`). It then fails as if the
server had never answered, and a guard's own time limit reports a timeout. But the server did
answer: the call reached it and may have taken effect.

:func:`readable_answers` wraps the stdio transport. A line that the SDK could not read
for its depth is read again with every container deeper than
:data:`~limbo_plugin.server.deep_lines.LINE_DEPTH` emptied, only to find its id. The request is
then answered with a JSON-RPC error of that id, at once, saying what happened. Nothing of
the emptied answer is passed on as if it were the server's.

Over streamable HTTP the SDK already answers such a response with a parse error of the
request's id, so only stdio needs this.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from limbo_plugin.server.deep_lines import LINE_DEPTH, emptied_below, reply_id

UNREADABLE_ANSWER = (
    f"the server answered, but its answer nests more than {LINE_DEPTH} levels deep, past what "
    "the MCP client reads; it was not read, and the call may have taken effect")
"""The error a request gets in place of such an answer."""


def too_deep_answer(error: BaseException) -> str | int | None:
    """For the SDK's parse error of a line that nests too deep and holds an answer (a result or
    an error of a request), that request's id; else ``None``."""
    import pydantic
    import pydantic_core

    if not isinstance(error, pydantic.ValidationError):
        return None
    problems = error.errors(include_url=False)
    if len(problems) != 1 or problems[0]["type"] != "json_invalid" or \
            "recursion limit" not in str(problems[0].get("msg", "")):
        return None
    line = problems[0].get("input")
    if not isinstance(line, str | bytes):
        return None
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    try:
        message = pydantic_core.from_json(emptied_below(text, LINE_DEPTH))
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" in message or \
            not ("result" in message or "error" in message):
        return None  # a request or notification of the server's: left as the SDK has it
    return reply_id(message)


def error_in_place(error: BaseException) -> Any:
    """What the session reads in place of the SDK's parse ``error``: an error answer of the
    request whose answer was too deep to read, or ``error`` itself."""
    request_id = too_deep_answer(error)
    if request_id is None:
        return error
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    return SessionMessage(types.JSONRPCError(
        jsonrpc="2.0", id=request_id,
        error=types.ErrorData(code=types.PARSE_ERROR, message=UNREADABLE_ANSWER)))


class _HandledHere(logging.Filter):
    """Drops the SDK's traceback of a parse error that :func:`error_in_place` answers: the
    request's error says what happened, in one line, and a proxy's or a guard's stderr is the
    operator's."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or too_deep_answer(error) is None


_FILTER = _HandledHere()


@asynccontextmanager
async def readable_answers(transport: AbstractAsyncContextManager[tuple[Any, Any]]
                           ) -> AsyncIterator[tuple[Any, Any]]:
    """``transport``'s streams, with each answer too deep to read replaced by an error of its
    request's id (:func:`error_in_place`)."""
    import anyio

    sdk_log = logging.getLogger("mcp.client.stdio")
    if _FILTER not in sdk_log.filters:
        sdk_log.addFilter(_FILTER)
    async with transport as (read, write):
        sender, receiver = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with sender:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for item in read:
                        await sender.send(error_in_place(item)
                                          if isinstance(item, Exception) else item)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(forward)
            try:
                async with receiver:
                    yield receiver, write
            finally:
                tasks.cancel_scope.cancel()
