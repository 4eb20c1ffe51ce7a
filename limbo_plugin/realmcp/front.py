"""How ``limbo proxy`` and ``limbo guard`` face their clients over streamable HTTP: with a token.

Whoever reaches the port can call the upstream's tools with the operator's credentials, and on a
shared machine any local process can reach a loopback port. So over HTTP a client must send
``Authorization: Bearer`` with the value of ``--bearer-env``'s variable, as ``limbo mcp``'s
clients always do. ``--no-token`` serves without one, on a loopback address only, and says so on
stderr each time.
"""

from __future__ import annotations

import argparse
import sys

from limbo_plugin.server.serving import check_serving_arguments, is_loopback


def add_no_token_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-token", action="store_true",
                        help="streamable-http on a loopback address: serve without "
                        "--bearer-env (any local process can then call the tools)")


def check_front(args: argparse.Namespace, label: str) -> str | None:
    """The serving options checked (one-line :class:`ValueError`); the token clients must send."""
    token = check_serving_arguments(args)
    if args.transport == "stdio":
        return None
    if token is not None:
        return token
    if not args.no_token:
        raise ValueError("--transport streamable-http needs --bearer-env NAME (clients must "
                         "send 'Authorization: Bearer' with that variable's value), or "
                         "--no-token to serve a loopback address without one")
    if not is_loopback(args.host):
        raise ValueError(f"--no-token serves loopback addresses only, not --host {args.host}; "
                         "give --bearer-env NAME")
    print(f"{label}: warning: serving without a token (--no-token): any local process can "
          "call the upstream's tools", file=sys.stderr, flush=True)
    return None
