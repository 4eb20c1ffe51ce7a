"""A proxy's faults as HTTP itself makes them: a real ``500`` status, a connection that closes
half-way through its answer.

Over streamable HTTP an MCP answer travels in an HTTP response the SDK starts before the tool
runs, so a fault that lives in the status line or the connection has to be made before the
request reaches the SDK. This ASGI middleware reads a POST's JSON-RPC message, asks the proxy
whether the call is faulted at the HTTP level (:meth:`FaultProxy.over_http`, which also does
the server's side of the fault) and, if so, answers it itself; every other request reaches the
SDK untouched. It runs inside the bearer check: an unauthenticated request never reaches a
server through it.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Protocol

from limbo_plugin.server.deep_lines import bearer_given, read_body, replayed

CUT_ANSWER = b'{"jsonrpc": "2.0", "id": '
"""What a dropped connection sends of its answer before it closes: the start of a JSON-RPC
response (headers say more is coming)."""

UNFINISHED = "ASGI callable returned without completing response."
"""uvicorn's log line for an answer left unfinished: here that is the fault, on purpose."""


class HttpFaulting(Protocol):
    async def over_http(self, name: str, arguments: dict[str, Any]) -> str | None: ...

    @property
    def answer_text(self) -> str | None: ...


class _QuietCut(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != UNFINISHED


class HttpFaults:
    """ASGI middleware: ``proxy``'s HTTP-level faults (``token``: the endpoint's, if any)."""

    def __init__(self, app: Any, *, proxy: HttpFaulting, token: str | None = None) -> None:
        self.app, self.proxy = app, proxy
        self.bearer = f"Bearer {token}".encode() if token else None
        logging.getLogger("uvicorn.error").addFilter(_QuietCut())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or not bearer_given(scope, self.bearer)):
            await self.app(scope, receive, send)
            return
        read = await read_body(receive)
        if read is None:  # the client left: nothing to answer
            return
        body, more = read
        call = None if more else _tool_call(body)
        action = None if call is None else await self.proxy.over_http(*call)
        if action == "500":
            await _answer(send, 500, (self.proxy.answer_text or "").encode())
        elif action == "drop":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", b"4096")]})
            await send({"type": "http.response.body", "body": CUT_ANSWER, "more_body": True})
            # returning now leaves the answer unfinished: uvicorn closes the connection
        else:
            await self.app(scope, replayed(body, more, receive), send)


def _tool_call(body: bytes) -> tuple[str, dict[str, Any]] | None:
    """The tool and arguments of a ``tools/call`` request in ``body``, else None (anything
    else, a batch or an unreadable body included, goes to the SDK to answer)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call" or \
            "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return None
    arguments = params.get("arguments")
    return params["name"], dict(arguments) if isinstance(arguments, dict) else {}


async def _answer(send: Any, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})

