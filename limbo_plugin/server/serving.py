"""Serving a low-level MCP server on stdio or on streamable HTTP: the one serve loop of
``limbo mcp``, ``limbo proxy`` and ``limbo guard``.

Over HTTP the endpoint is for the local client it was started for, and nothing else:

- it binds a loopback address unless ``--allow-remote`` says otherwise: a port on every
  interface lets any machine on the network call the episode's tools, and whatever it writes is
  graded as the agent's;
- with a ``token`` (``limbo mcp`` always has one: the episode's), every request must carry
  ``Authorization: Bearer <token>``, checked by the SDK's own bearer middleware; another local
  process that finds the port gets HTTP 401;
- the ``Host`` and ``Origin`` headers must name the bound address (the SDK's DNS-rebinding
  protection), so a web page cannot reach the port through a name it controls.

The socket listens before the URL is announced on stderr, so a client that connects the moment it
reads the line is queued by the kernel until the server accepts it, never refused; nothing is
assumed about how long start-up takes.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import anyio

TRANSPORTS = ("stdio", "streamable-http")
MCP_PATH = "/mcp"
LOOPBACK_NAMES = ("localhost",)
MAX_HTTP_BODY_BYTES = 64 * 1024 * 1024
MAX_CONNECTIONS = 256
"""Connections `limbo mcp` serves at once over HTTP; uvicorn answers 503 beyond."""
"""The largest request the HTTP endpoint reads (the SDK's default is 4 MiB). A model's tool call
is far smaller; what is larger still reaches the episode, to be refused as a tool error the way
an in-process agent's would be, instead of failing as an HTTP 413 nobody records."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback ``host`` unless ``allow_remote``: one line saying what is valid."""
    if not allow_remote and not is_loopback(host):
        raise ValueError(f"--host {host} is not a loopback address: the MCP endpoint would be "
                         "reachable from other machines; use 127.0.0.1, ::1 or localhost, or "
                         "pass --allow-remote to serve on it anyway")


def port_number(text: str) -> int:
    """``--port``'s type: a TCP port, 0 for a free one (argparse's one-line error otherwise,
    where the socket's own was an ``OverflowError`` traceback)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port number from 0 to 65535 (0: a free one), "
                                         f"got {text!r}")
    return port


def check_serving_arguments(args: argparse.Namespace) -> str | None:
    """The checks of :func:`add_serving_arguments`' options, before anything is started; the
    bearer token clients must send (``--bearer-env``), if any."""
    if args.transport == "stdio":
        return None
    check_host(args.host, args.allow_remote)
    variable = getattr(args, "bearer_env", None)
    if variable is None:
        return None
    token = os.environ.get(variable, "")
    if not token.strip():
        raise ValueError(f"--bearer-env {variable}: that environment variable is not set or "
                         "empty; set it to the token clients must send")
    return token


class EpisodeTokenVerifier:
    """The SDK's ``TokenVerifier`` accepting exactly one bearer token (compared in constant
    time)."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token=token, client_id="limbo", scopes=[])
        return None


def http_app(server: Any, host: str, port: int, token: str | None) -> Any:
    """The Starlette app serving ``server`` at :data:`MCP_PATH`, with the checks above."""
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings

    names = ["127.0.0.1", "localhost", "[::1]"]
    literal = f"[{host}]" if ":" in host else host
    if literal not in names:
        names.append(literal)
    wildcard = host in ("0.0.0.0", "::")
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=not wildcard,  # every name of the machine is valid
        allowed_hosts=[f"{name}:{port}" for name in names],
        allowed_origins=[f"http://{name}:{port}" for name in names])
    auth: dict[str, Any] = {}
    if token is not None:
        # Resource-server mode with no authorization server: the issuer URL is never served.
        auth = {"auth": AuthSettings(issuer_url=f"http://{literal}:{port}",
                                     resource_server_url=None),
                "token_verifier": EpisodeTokenVerifier(token)}
    return server.streamable_http_app(streamable_http_path=MCP_PATH, host=host,
                                      transport_security=security,
                                      max_request_body_size=MAX_HTTP_BODY_BYTES, **auth)


async def serve(server: Any, transport: str, *, label: str, host: str = "127.0.0.1",
                port: int = 0, token: str | None = None, allow_remote: bool = False,
                empty_deep_lines: bool = False,
                wrap: Callable[[Any], Any] | None = None) -> None:
    """Serve ``server`` until its client leaves (stdio) or the process is stopped (HTTP).

    A request nested past the SDK parser's limit (:mod:`~limbo_plugin.server.deep_lines`) is
    answered, never dropped, on either transport. With ``empty_deep_lines`` (``limbo mcp``,
    whose episode refuses such arguments whatever their depth), as the call it is, emptied
    below the limit. Without (a proxy or a guard, which would forward the emptied call, not
    the one made, to a real server), with a JSON-RPC error of its id. Over HTTP, ``wrap`` puts
    an ASGI middleware of the caller's around the MCP app: inside the token check, before the
    SDK (a proxy answering a faulted call at the HTTP level)."""
    from limbo_plugin.server.deep_lines import ReadableBodies, claimed_stdin, refuse_unreadable

    if not empty_deep_lines:
        server.middleware.append(refuse_unreadable)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        with claimed_stdin(empty=empty_deep_lines) as lines:
            # The SDK only iterates its stdin; the lines come as the SDK's parser can read them.
            stdin = cast("anyio.AsyncFile[str]", lines)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())
        return
    import uvicorn

    check_host(host, allow_remote)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(socket.SOMAXCONN)
    bound = sock.getsockname()[1]
    mcp_app = http_app(server, host, bound, token)
    app = ReadableBodies(wrap(mcp_app) if wrap else mcp_app, empty=empty_deep_lines,
                         token=token)
    # At most MAX_CONNECTIONS at once (uvicorn answers 503 beyond), idle ones closed after 5 s:
    # an unauthenticated local client is refused by the bearer check before its body is read.
    config = uvicorn.Config(app, log_level="warning", lifespan="on",
                            limit_concurrency=MAX_CONNECTIONS, timeout_keep_alive=5)
    literal = f"[{host}]" if ":" in host else host
    print(f"{label}: serving streamable HTTP at http://{literal}:{bound}{MCP_PATH}",
          file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def add_serving_arguments(parser: argparse.ArgumentParser, *, bearer: bool = False) -> None:
    """``--transport``, ``--host``, ``--port``, ``--allow-remote``; with ``bearer``, also
    ``--bearer-env`` (a server with no token of its own, such as the guard)."""
    if bearer:
        parser.add_argument("--bearer-env", default=None, metavar="NAME",
                            help="streamable-http only: require every request to carry "
                            "'Authorization: Bearer' with the value of this environment "
                            "variable (kept out of the command line, which ps shows)")
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio",
                        help="how clients reach this server (default stdio)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="streamable-http only: a loopback address unless --allow-remote")
    parser.add_argument("--port", type=port_number, default=0,
                        help="streamable-http only; 0 picks a free port")
    parser.add_argument("--allow-remote", action="store_true",
                        help="streamable-http only: allow a --host other machines can reach")


def command_main(prog: str, doc: str | None, add_arguments: Callable[[Any], None],
                 run: Callable[[argparse.Namespace], int],
                 argv: Sequence[str] | None = None) -> int:
    """The ``main`` of a ``limbo`` subcommand run as a module: its parser, then ``run``."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
