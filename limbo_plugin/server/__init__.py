"""The harness path: an episode's tools over loopback HTTP, and the MCP server in front of it.

- :mod:`~limbo_plugin.server.sandbox_http`: the sandbox service (one per worker), which binds an
  episode to a fresh bearer token and serves only its tool list and tool calls;
- :mod:`~limbo_plugin.server.mcp_server`: ``limbo mcp``, the official-SDK MCP server a harness
  launches, forwarding ``tools/list`` and ``tools/call`` to the service;
- :mod:`~limbo_plugin.server.client`: the service's small blocking client;
- :mod:`~limbo_plugin.server.oversized`: how the client sends a call over the service's body
  limit, so that the episode still answers and records it as it would in process;
- :mod:`~limbo_plugin.server.wire`: how tools and results look on the wire.

The fault plan, the ledger, the seeds and the grade never leave the process that runs the
episode: the service has no route for them.
"""

from typing import Any

__all__ = ["EpisodeLease", "SandboxServer", "shared_sandbox"]


def __getattr__(name: str) -> Any:
    # Lazy: ``limbo mcp`` imports this package at every harness start and needs none of it.
    if name in __all__:
        from limbo_plugin.server import sandbox_http

        return getattr(sandbox_http, name)
    raise AttributeError(name)
