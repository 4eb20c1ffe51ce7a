"""Every kind of agent, one entry each: how its spec string is checked and how it is built.

An agent is named by a spec string ``<kind>:<rest>`` (``scripted:verify_first``,
``litellm:openai/gpt-5-mini``). An :class:`AgentKind` says what ``rest`` must be (checking it
with a one-line error that shows the valid form) and builds the agent, importing its module only
then (litellm is slow to import). A new kind of agent is one module and one entry in
:data:`AGENT_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from limbo_plugin.agents.base import Agent
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.scripted import POLICIES
from limbo_plugin.errors import UsageError


@dataclass(frozen=True)
class AgentKind:
    """``prefix`` names the kind, ``form`` shows its spec strings in error messages, ``check``
    raises :class:`UsageError` when ``rest`` is not valid, ``build`` makes the agent."""

    prefix: str
    form: str
    check: Callable[[str], None]
    build: Callable[[str, AgentOptions], Agent]


def _check_policy(rest: str) -> None:
    if rest not in POLICIES:
        raise UsageError(f"unknown agent {'scripted:' + rest!r}; scripted policies: "
                         + ", ".join(f"scripted:{p}" for p in POLICIES))


def _build_scripted(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.scripted import ScriptedAgent

    return ScriptedAgent(rest)


def _check_model(rest: str) -> None:
    if not rest:
        raise UsageError("agent 'litellm:' needs a model, e.g. litellm:openai/gpt-5-mini")


def _build_scaffold(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.scaffold import ScaffoldAgent  # lazy: it leads to litellm

    return ScaffoldAgent(rest, options)


AGENT_KINDS: tuple[AgentKind, ...] = (
    AgentKind("scripted", f"scripted:<policy> ({', '.join(POLICIES)})", _check_policy,
              _build_scripted),
    AgentKind("litellm", "litellm:<model>", _check_model, _build_scaffold),
)


def agent_kind(spec: str) -> tuple[AgentKind, str]:
    """The kind ``spec`` names and the rest of the spec; :class:`UsageError` if it names none."""
    prefix, _, rest = spec.partition(":")
    for kind in AGENT_KINDS:
        if kind.prefix == prefix:
            return kind, rest
    raise UsageError(f"unknown agent {spec!r}; valid forms: "
                     + ", ".join(kind.form for kind in AGENT_KINDS))


def check_agent(spec: str) -> None:
    """Raise :class:`UsageError`, naming the valid forms, when ``spec`` is not an agent."""
    kind, rest = agent_kind(spec)
    kind.check(rest)


def make_agent(spec: str, options: AgentOptions | None = None) -> Agent:
    """The agent ``spec`` names (a validated run configuration's ``agent``)."""
    kind, rest = agent_kind(spec)
    return kind.build(rest, options or AgentOptions())
