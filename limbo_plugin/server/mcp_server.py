"""``limbo mcp``: the MCP server a harness launches, forwarding to the sandbox service.

Built on the official SDK's low-level :class:`mcp.server.lowlevel.Server`, which hands
``tools/call`` arguments over untouched (and, through a middleware, a name or arguments its
validation would refuse): a malformed call must reach the episode's transport and come back as
the same tool error the in-process scaffold would see, not be rejected on the way. A call too
large for the sandbox service is sent as what the episode keeps of it
(:mod:`~limbo_plugin.server.oversized`), and answered and recorded the same way.

It forwards exactly two requests and nothing else — no resources, prompts or logging:

- ``tools/list`` → ``GET /v1/tools``: each tool with its ``inputSchema``, the description of the
  run's contract and documentation variant, and the MCP annotations ``readOnlyHint``,
  ``idempotentHint``, ``destructiveHint`` (and ``openWorldHint``);
- ``tools/call`` → ``POST /v1/tools/call``: a ``CallToolResult`` whose one text block is the
  result's canonical JSON text, with ``isError`` for a tool error (timeout, 500, validation …).

If the sandbox itself cannot be reached or refuses the token, the request fails with an MCP
error rather than a tool result: that is an infrastructure problem, not something the agent did.

Over streamable HTTP a client must send the episode's token as ``Authorization: Bearer`` (the
same token the sandbox takes), and the server binds loopback only unless ``--allow-remote``: the
port is the episode's, and anything that reaches it acts as the agent
(:mod:`~limbo_plugin.server.serving`).

Usage (the token is better passed in ``LIMBO_SANDBOX_TOKEN``, which ``ps`` does not show)::

    limbo mcp --url http://127.0.0.1:PORT [--token TOKEN]
    limbo mcp --url … --transport streamable-http --host 127.0.0.1 --port 8765   # URL on stderr
"""

from __future__ import annotations

import argparse
import contextvars
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from limbo_plugin.server.client import SandboxClient, SandboxError
from limbo_plugin.server.serving import (
    add_serving_arguments,
    check_serving_arguments,
    command_main,
    serve,
)
from limbo_plugin.server.wire import SERVER_NAME, TOKEN_ENV, URL_ENV


def build_server(client: SandboxClient, name: str = SERVER_NAME) -> Any:
    """The MCP server forwarding ``tools/list`` and ``tools/call`` to ``client``."""
    import anyio.to_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    async def list_tools(ctx: Any, params: Any) -> Any:
        try:
            listed = await anyio.to_thread.run_sync(client.list_tools)
        except SandboxError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        tools = [types.Tool(name=t["name"], description=t.get("description"),
                            input_schema=t["inputSchema"],
                            annotations=types.ToolAnnotations(**_snake(t.get("annotations"))))
                 for t in listed]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        raw = _RAW_FIELDS.get({})
        name = raw.get("name", params.name)
        arguments = raw.get("arguments", {} if params.arguments is None else params.arguments)
        try:
            text, is_error = await anyio.to_thread.run_sync(client.call, name, arguments)
        except SandboxError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        except Exception as exc:  # whatever the call was, the request gets an answer
            raise MCPError(code=types.INTERNAL_ERROR,
                           message=f"the call could not be forwarded: {exc!r}"[:500]) from None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    is_error=is_error)

    server = Server(name, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool)
    server.middleware.append(_as_sent)
    return server


_RAW_FIELDS: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar("limbo_raw_fields")


async def _as_sent(ctx: Any, call_next: Any) -> Any:
    """Server middleware: a ``tools/call`` whose ``name`` is not a string (a number, an object,
    null) or whose ``arguments`` is not an object (a list, a number, a JSON text) reaches
    :func:`build_server`'s handler as sent, not the SDK's ``-32602``.

    An in-process agent that sends such a call gets a tool error in its trace (``unknown_tool``,
    ``invalid_arguments``; or, for a JSON text, its call parsed); over MCP it must be the same
    call. The SDK validates ``params`` after the middleware, so the fields it would refuse ride
    past it in a context variable, and it sees an empty name and no ``arguments`` instead. A
    call with no name at all is the SDK's to refuse: no agent in process can send one."""
    params = ctx.params
    if ctx.method != "tools/call" or not isinstance(params, Mapping):
        return await call_next(ctx)
    raw = _unvalidated(params)
    if not raw:
        return await call_next(ctx)
    token = _RAW_FIELDS.set(raw)
    try:
        valid = {k: v for k, v in params.items() if k not in raw}
        if "name" in raw:
            valid["name"] = ""
        return await call_next(dataclasses.replace(ctx, params=valid))
    finally:
        _RAW_FIELDS.reset(token)


def _unvalidated(params: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a ``tools/call``'s ``params`` the SDK would refuse, as sent."""
    raw: dict[str, Any] = {}
    if "name" in params and not isinstance(params["name"], str):
        raw["name"] = params["name"]
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raw["arguments"] = arguments
    return raw


def _snake(annotations: Any) -> dict[str, Any]:
    hints = {"readOnlyHint": "read_only_hint", "idempotentHint": "idempotent_hint",
             "destructiveHint": "destructive_hint", "openWorldHint": "open_world_hint"}
    return {hints[k]: v for k, v in (annotations or {}).items() if k in hints}


def _version() -> str:
    from limbo_plugin._version import __version__

    return __version__


async def serve_stdio(client: SandboxClient) -> None:
    await serve(build_server(client), "stdio", label="limbo mcp", empty_deep_lines=True)


async def serve_http(client: SandboxClient, host: str, port: int, token: str,
                     allow_remote: bool = False) -> None:
    """Serve streamable HTTP on ``host:port`` (0 picks a free port); the URL goes to stderr.
    Every request must carry the episode's token as ``Authorization: Bearer``."""
    await serve(build_server(client), "streamable-http", label="limbo mcp", host=host,
                port=port, token=token, allow_remote=allow_remote, empty_deep_lines=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", default=None,
                        help=f"the sandbox service URL (or ${URL_ENV})")
    parser.add_argument("--token", default=None,
                        help=f"the episode's bearer token (better: ${TOKEN_ENV}, hidden from ps);"
                        " over streamable-http, clients must send it too")
    add_serving_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Entry point of ``limbo mcp`` (argument errors are one line on stderr, exit 2)."""
    import anyio

    url = args.url or os.environ.get(URL_ENV)
    token = args.token or os.environ.get(TOKEN_ENV)
    if not url:
        return _usage(f"--url (or ${URL_ENV}) is required: the sandbox service URL")
    if not token:
        return _usage(f"--token (or ${TOKEN_ENV}) is required: the episode's bearer token")
    try:
        check_serving_arguments(args)
    except ValueError as exc:
        return _usage(str(exc))
    try:
        client = SandboxClient(url, token)
    except SandboxError as exc:
        return _usage(str(exc))
    try:
        if args.transport == "stdio":
            anyio.run(serve_stdio, client)
            # The client closed the channel: nothing is left to send. Skipping the interpreter's
            # teardown of the SDK's many modules saves ~0.3 s per episode, which a harness (or
            # the stdio client's shutdown) would otherwise wait out.
            client.close()
            sys.stdout.flush()
            os._exit(0)
        else:
            anyio.run(serve_http, client, args.host, args.port, token,
                      args.allow_remote)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        return _usage(f"cannot serve on {args.host}:{args.port}: {exc}")
    finally:
        client.close()
    return 0


def _usage(message: str) -> int:
    print(f"limbo mcp: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    return command_main("limbo mcp", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
