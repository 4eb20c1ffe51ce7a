"""The command an MCP client starts to get one episode's ``limbo mcp`` stdio server quickly.

Run by path (``python -S -E mcp_attach.py``) it imports only the standard library, so it starts
in milliseconds: it connects to this worker's MCP fork server (:mod:`limbo_plugin.server.mcp_fork`),
hands over its own stdin, stdout and stderr with the episode's URL and token, and waits. The fork
server forks a child that has the MCP SDK imported already, and that child serves ``limbo mcp``
on exactly those three descriptors: the client's pipes reach the real server directly, nothing is
relayed. When the child ends (the client closed stdin), this process exits with its status.

Environment: ``LIMBO_MCP_FORK_SOCKET`` (the fork server's socket), ``LIMBO_SANDBOX_URL`` and
``LIMBO_SANDBOX_TOKEN`` (the episode's sandbox and bearer token, as for ``limbo mcp``).
"""

from __future__ import annotations

import _socket  # not ``socket``: its enums cost more start-up time than the rest of this file
import os
import sys
from array import array

SOCKET_ENV = "LIMBO_MCP_FORK_SOCKET"
TOKEN_ENV = "LIMBO_SANDBOX_TOKEN"  # as limbo_plugin.server.wire (not imported: kept stdlib-only)
URL_ENV = "LIMBO_SANDBOX_URL"


def request_text(url: str, token: str) -> bytes:
    """The request: the URL and the token, one line each (neither holds a line break)."""
    return f"{url}\n{token}".encode()


def main() -> int:
    path, url, token = (os.environ.get(SOCKET_ENV), os.environ.get(URL_ENV),
                        os.environ.get(TOKEN_ENV))
    if not path or not url or not token or "\n" in url + token:
        print(f"limbo mcp attach: {SOCKET_ENV}, {URL_ENV} and {TOKEN_ENV} are required "
              "(one line each)", file=sys.stderr)
        return 2
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        connection.connect(path)
        descriptors = array("i", [0, 1, 2]).tobytes()
        connection.sendmsg([request_text(url, token)],
                           [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptors)])
        connection.shutdown(_socket.SHUT_WR)  # the request is complete
        status = connection.recv(1)
    except OSError as exc:
        print(f"limbo mcp attach: the MCP fork server at {path} is not answering: {exc}",
              file=sys.stderr)
        return 1
    finally:
        connection.close()
    return status[0] if status else 1


if __name__ == "__main__":
    sys.exit(main())
