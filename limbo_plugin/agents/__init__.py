"""Agents: the scripted reference policies, the litellm scaffold and (later) harness adapters.

An agent is named by a spec string ``<kind>:<rest>``; :mod:`~limbo_plugin.agents.registry` has
one entry per kind:

- ``scripted:<policy>`` — a scripted reference policy, in process;
- ``mcp:<policy>`` — the same policy acting through the real stdio MCP server;
- ``litellm:<model>`` — the paper's minimal function-calling scaffold;
- ``harness:<name>:<model>`` — a production agent CLI (``codex``, ``copilot``, ``hermes``);
- ``harness:command:<name or path>`` — your own MCP-capable CLI, declared in a YAML file;
- ``python:<module>:<callable>`` — your own agent in Python, implementing :class:`Agent`.

Model-backed agents are imported only when used (litellm is slow to import).
"""

from __future__ import annotations

from limbo_plugin.agents.base import Agent, AgentSession, InfrastructureError
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.registry import (
    AGENT_KINDS,
    all_agent_kinds,
    check_agent,
    check_ready,
    make_agent,
)
from limbo_plugin.errors import EpisodeOver

__all__ = ["AGENT_KINDS", "Agent", "AgentOptions", "AgentSession", "EpisodeOver",
           "InfrastructureError", "all_agent_kinds", "check_agent", "check_ready", "make_agent"]
