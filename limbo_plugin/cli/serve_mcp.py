"""``limbo mcp``: serve an episode's sandbox as an MCP server, as a harness launches it."""

from __future__ import annotations

import argparse

from limbo_plugin.cli.common import Subcommands


def register(sub: Subcommands) -> None:
    from limbo_plugin.server import mcp_server

    mcp = sub.add_parser("mcp", help="serve an episode's sandbox as an MCP server (harnesses "
                         "launch this)")
    mcp_server.add_arguments(mcp)
    mcp.set_defaults(handler=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from limbo_plugin.extras import require
    from limbo_plugin.server import mcp_server

    require("mcp", "limbo mcp")
    return int(mcp_server.run(args) or 0)
