"""Agents: scripted reference policies, the litellm scaffold, harness CLIs and your own.

An agent is named by a spec string; each kind is one small entry below (its prefix, a check of
the rest of the string with a one-line error listing the valid forms, and a lazy factory):

- ``scripted:<policy>`` — a scripted reference policy, in process;
- ``mcp:<policy>`` — the same policy acting through the real stdio MCP server;
- ``litellm:<model>`` — the paper's minimal function-calling scaffold;
- ``harness:<name>:<model>`` — a production agent CLI (``codex``, ``copilot``, ``hermes``);
- ``harness:command:<name or path>`` — your own MCP-capable CLI, declared in a YAML file;
- ``python:<module>:<callable>`` — your own agent in Python, implementing :class:`Agent`.

Model-backed agents are imported only when used (litellm is slow to import).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from limbo_plugin.agents.base import Agent, AgentSession, EpisodeOver, InfrastructureError
from limbo_plugin.errors import UsageError

__all__ = ["AGENT_KINDS", "Agent", "AgentSession", "EpisodeOver", "InfrastructureError",
           "make_agent", "validate_agent_spec"]

Options = Mapping[str, Any]


@dataclass(frozen=True)
class AgentKind:
    """One kind of agent: ``validate(rest)`` raises a one-line :class:`UsageError`;
    ``factory(rest, options)`` builds the agent (imports happen inside it)."""

    prefix: str
    form: str
    validate: Callable[[str], None]
    factory: Callable[[str, Options], Agent]


def _policies() -> tuple[str, ...]:
    from limbo_plugin.agents.scripted import POLICIES

    return POLICIES


def _check_policy(prefix: str) -> Callable[[str], None]:
    def check(rest: str) -> None:
        if rest not in _policies():
            raise UsageError(f"unknown agent '{prefix}:{rest}'; valid: "
                             + ", ".join(f"{prefix}:{p}" for p in _policies()))
    return check


def _scripted(rest: str, options: Options) -> Agent:
    from limbo_plugin.agents.scripted import ScriptedAgent

    return ScriptedAgent(rest)


def _mcp(rest: str, options: Options) -> Agent:
    from limbo_plugin.agents.mcp_agent import McpPolicyAgent

    return McpPolicyAgent(rest)


def _check_litellm(rest: str) -> None:
    if not rest:
        raise UsageError("agent 'litellm:' needs a model, e.g. litellm:openai/gpt-5-mini")


def _litellm(rest: str, options: Options) -> Agent:
    from limbo_plugin.agents.scaffold import ScaffoldAgent  # lazy: imports litellm

    return ScaffoldAgent(rest, options=dict(options))


HARNESS_FORMS = "harness:<name>:<model> (codex, copilot, hermes) or harness:command:<name|path>"


def _check_harness(rest: str) -> None:
    from limbo_plugin.agents.harness_install import find_harness, resolve_executable

    name, _, model = rest.partition(":")
    if not name or not model:
        raise UsageError(f"agent 'harness:{rest}' must have the form {HARNESS_FORMS}")
    spec = find_harness(model if name == "command" else name)
    resolve_executable(spec)


def _harness(rest: str, options: Options) -> Agent:
    from limbo_plugin.agents.harness import HarnessAgent
    from limbo_plugin.agents.harness_install import find_harness

    name, _, model = rest.partition(":")
    if name != "command":
        return HarnessAgent(find_harness(name), model, options)
    spec = find_harness(model)
    chosen = (options.get("model_options") or {}).get("model") or spec.model
    if not chosen:
        raise UsageError(f"agent 'harness:{rest}' needs a model: set `model:` in {spec.file} "
                         "or pass --model-option model=NAME")
    return HarnessAgent(spec, str(chosen), options, name=f"harness:{rest}")


def _check_python(rest: str) -> None:
    from limbo_plugin.agents.python_agent import resolve

    resolve(rest)


def _python(rest: str, options: Options) -> Agent:
    from limbo_plugin.agents.python_agent import make_python_agent

    return make_python_agent(rest, options)


KINDS: dict[str, AgentKind] = {kind.prefix: kind for kind in (
    AgentKind("scripted", "scripted:<policy>", _check_policy("scripted"), _scripted),
    AgentKind("mcp", "mcp:<policy>", _check_policy("mcp"), _mcp),
    AgentKind("litellm", "litellm:<model>", _check_litellm, _litellm),
    AgentKind("harness", HARNESS_FORMS, _check_harness, _harness),
    AgentKind("python", "python:<module>:<callable>", _check_python, _python),
)}
AGENT_KINDS = tuple(KINDS)


def validate_agent_spec(spec: str) -> None:
    """Raise :class:`UsageError` naming the valid forms when ``spec`` is not an agent we know."""
    prefix, _, rest = spec.partition(":")
    kind = KINDS.get(prefix)
    if kind is None:
        raise UsageError(f"unknown agent {spec!r}; valid forms: "
                         + ", ".join(k.form for k in KINDS.values())
                         + f" (policies: {', '.join(_policies())})")
    kind.validate(rest)


def make_agent(spec: str, options: Options | None = None) -> Agent:
    validate_agent_spec(spec)
    prefix, _, rest = spec.partition(":")
    return KINDS[prefix].factory(rest, dict(options or {}))
