"""Serving a low-level MCP server on stdio or on streamable HTTP (loopback), for the proxy and
the guard. Over HTTP the URL is announced on stderr once the socket is bound, which is what a
client (or a test) waits for; nothing is assumed about how long start-up takes."""

from __future__ import annotations

import socket
import sys
from typing import Any

TRANSPORTS = ("stdio", "streamable-http")
MCP_PATH = "/mcp"


async def serve(server: Any, transport: str, host: str, port: int, label: str) -> None:
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(f"{label}: serving streamable HTTP at http://{host}:{bound}{MCP_PATH}",
          file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


def add_serving_arguments(parser: Any) -> None:
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio",
                        help="how clients reach this server (default stdio)")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http only")
    parser.add_argument("--port", type=int, default=0,
                        help="streamable-http only; 0 picks a free port")
