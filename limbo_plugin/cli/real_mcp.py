"""``limbo audit``, ``limbo proxy`` and ``limbo guard``: the tools for real MCP servers
(:mod:`limbo_plugin.realmcp`), registered on the main parser in one call."""

from __future__ import annotations

import argparse
from typing import Any


def _handler(module: str, what: str) -> Any:
    def handle(args: argparse.Namespace) -> int:
        import importlib

        from limbo_plugin.extras import require

        require("mcp", what)
        return int(importlib.import_module(module).run(args) or 0)

    return handle


def register(sub: Any) -> None:
    """Add ``audit`` (and the other real-server tools) to ``limbo``'s subparsers."""
    from limbo_plugin.realmcp import audit

    parser = sub.add_parser("audit", help="audit an MCP server's tools for retry safety "
                            "(keys, read-backs, consistency); exit 1 if a write is unprotected")
    audit.add_arguments(parser)
    parser.set_defaults(handler=_handler("limbo_plugin.realmcp.audit", "limbo audit"))
    from limbo_plugin.realmcp import proxy

    parser = sub.add_parser("proxy", help="inject the benchmark's transport faults between an "
                            "MCP client and server and log every call; `limbo proxy report "
                            "LOG` counts the duplicates")
    proxy.add_arguments(parser)
    parser.set_defaults(handler=_handler("limbo_plugin.realmcp.proxy", "limbo proxy"))
    from limbo_plugin.realmcp import guard

    parser = sub.add_parser("guard", help="serve an MCP server's tools through the paper's "
                            "guard (keys, consistency, block, annotate), configured from "
                            "limbo audit")
    guard.add_arguments(parser)
    parser.set_defaults(handler=_handler("limbo_plugin.realmcp.guard", "limbo guard"))
