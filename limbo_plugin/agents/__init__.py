"""Agents: the scripted reference policies, the litellm scaffold and (later) harness adapters.

An agent is named by a spec string: ``scripted:<policy>``, ``litellm:<model>`` or
``harness:<name>:<model>``. Model-backed agents are imported only when used (litellm is slow to
import).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from limbo_plugin.agents.base import Agent, AgentSession, EpisodeOver, InfrastructureError
from limbo_plugin.errors import UsageError

AGENT_KINDS = ("scripted", "litellm", "mcp")

__all__ = ["Agent", "AgentSession", "EpisodeOver", "InfrastructureError", "make_agent",
           "validate_agent_spec"]


def validate_agent_spec(spec: str) -> None:
    """Raise :class:`UsageError` naming the valid forms when ``spec`` is not an agent we know."""
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        from limbo_plugin.agents.scripted import POLICIES

        if rest not in POLICIES:
            raise UsageError(f"unknown agent {spec!r}; scripted policies: "
                             + ", ".join(f"scripted:{p}" for p in POLICIES))
        return
    if kind == "litellm":
        if not rest:
            raise UsageError("agent 'litellm:' needs a model, e.g. litellm:openai/gpt-5-mini")
        return
    if kind == "mcp":
        from limbo_plugin.agents.scripted import POLICIES

        if rest not in POLICIES:
            raise UsageError(f"unknown agent {spec!r}; policies over MCP: "
                             + ", ".join(f"mcp:{p}" for p in POLICIES))
        return
    from limbo_plugin.agents.scripted import POLICIES

    raise UsageError(f"unknown agent {spec!r}; valid forms: scripted:<policy> "
                     f"({', '.join(POLICIES)}), litellm:<model>, mcp:<policy>")


def make_agent(spec: str, options: Mapping[str, Any] | None = None) -> Agent:
    validate_agent_spec(spec)
    kind, _, rest = spec.partition(":")
    if kind == "scripted":
        from limbo_plugin.agents.scripted import ScriptedAgent

        return ScriptedAgent(rest)
    if kind == "mcp":
        from limbo_plugin.agents.mcp_agent import McpPolicyAgent

        return McpPolicyAgent(rest)
    from limbo_plugin.agents.scaffold import ScaffoldAgent  # lazy: imports litellm

    return ScaffoldAgent(rest, options=dict(options or {}))
