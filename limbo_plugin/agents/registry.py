"""Every kind of agent, one entry each: how its spec string is checked and how it is built.

An agent is named by a spec string ``<kind>:<rest>`` (``scripted:verify_first``,
``litellm:openai/gpt-5-mini``). An :class:`AgentKind` says what ``rest`` must be (checking it
with a one-line error that shows the valid form), whether this machine can run it, and builds the
agent, importing its module only then (litellm is slow to import). A new kind of agent is one
module and one entry in :data:`AGENT_KINDS`.

The two checks are apart on purpose. The *form* is checked wherever a spec string comes in (the
command line, an experiment spec): a typo is a spec error. Whether the agent can *run here* —
a harness CLI installed — is checked once before the first episode (:func:`check_ready`), so an
experiment that names harnesses still collects (``--collect-only`` states its size) on a machine
without them, and a run stops at once with the command that installs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from limbo_plugin.agents.base import Agent
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.scripted import POLICIES
from limbo_plugin.errors import UsageError
from limbo_plugin.extras import require


def _always_ready(rest: str) -> None:
    """Most agents need nothing installed beyond Limbo itself."""


@dataclass(frozen=True)
class AgentKind:
    """``prefix`` names the kind, ``form`` shows its spec strings in error messages, ``check``
    raises :class:`UsageError` when ``rest`` is not valid, ``build`` makes the agent, and
    ``ready`` raises :class:`UsageError` when this machine cannot run it (saying how to fix
    that), and ``extra`` names the pip extra it needs beyond the core install
    (:mod:`limbo_plugin.extras`)."""

    prefix: str
    form: str
    check: Callable[[str], None]
    build: Callable[[str, AgentOptions], Agent]
    ready: Callable[[str], None] = _always_ready
    extra: str | None = None


def _check_policy(prefix: str) -> Callable[[str], None]:
    def check(rest: str) -> None:
        if rest not in POLICIES:
            raise UsageError(f"unknown agent {prefix + ':' + rest!r}; {prefix} policies: "
                             + ", ".join(f"{prefix}:{p}" for p in POLICIES))
    return check


def _build_scripted(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.scripted import ScriptedAgent

    return ScriptedAgent(rest)


def _build_mcp(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.mcp_agent import McpPolicyAgent

    return McpPolicyAgent(rest)


def _check_model(rest: str) -> None:
    if not rest:
        raise UsageError("agent 'litellm:' needs a model, e.g. litellm:openai/gpt-5-mini")


def _build_scaffold(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.scaffold import ScaffoldAgent  # lazy: it leads to litellm

    return ScaffoldAgent(rest, options)


HARNESS_FORMS = "harness:<name>:<model> (codex, copilot, hermes) or harness:command:<name|path>"


def _check_harness(rest: str) -> None:
    """The form, and that the adapter exists and loads (a spec error, not a missing install)."""
    from limbo_plugin.agents.harness_install import find_harness

    name, _, model = rest.partition(":")
    if not name or not model:
        raise UsageError(f"agent 'harness:{rest}' must have the form {HARNESS_FORMS}")
    find_harness(model if name == "command" else name)


def _harness_ready(rest: str) -> None:
    """The CLI is installed (``limbo harness install <name>``) or its program is on PATH."""
    from limbo_plugin.agents.harness_install import find_harness, resolve_executable

    name, _, model = rest.partition(":")
    resolve_executable(find_harness(model if name == "command" else name))


def _build_harness(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.harness import HarnessAgent
    from limbo_plugin.agents.harness_install import find_harness

    name, _, model = rest.partition(":")
    if name != "command":
        return HarnessAgent(find_harness(name), model, options)
    spec = find_harness(model)
    chosen = options.model_options.get("model") or spec.model
    if not chosen:
        raise UsageError(f"agent 'harness:{rest}' needs a model: set `model:` in {spec.file} "
                         "or pass --model-option model=NAME")
    return HarnessAgent(spec, str(chosen), options, name=f"harness:{rest}")


def _check_python(rest: str) -> None:
    from limbo_plugin.agents.python_agent import resolve

    resolve(rest)


def _build_python(rest: str, options: AgentOptions) -> Agent:
    from limbo_plugin.agents.python_agent import make_python_agent

    return make_python_agent(rest, options)


AGENT_KINDS: tuple[AgentKind, ...] = (
    AgentKind("scripted", f"scripted:<policy> ({', '.join(POLICIES)})",
              _check_policy("scripted"), _build_scripted),
    AgentKind("mcp", "mcp:<policy>", _check_policy("mcp"), _build_mcp, extra="mcp"),
    AgentKind("litellm", "litellm:<model>", _check_model, _build_scaffold, extra="llm"),
    AgentKind("harness", HARNESS_FORMS, _check_harness, _build_harness, extra="mcp",
              ready=_harness_ready),
    AgentKind("python", "python:<module>:<callable>", _check_python, _build_python),
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
    if kind.extra is not None:
        require(kind.extra, f"agent {spec!r}")


def check_ready(specs: Iterable[str]) -> None:
    """Raise one :class:`UsageError` naming every agent of ``specs`` this machine cannot run
    (each kind's ``ready``; e.g. "harness copilot is not installed: run `limbo harness install
    copilot` …"), so a run stops before its first episode rather than failing each one."""
    problems: dict[str, None] = {}
    for spec in sorted(set(specs)):
        kind, rest = agent_kind(spec)
        try:
            kind.ready(rest)
        except UsageError as exc:
            problems[str(exc)] = None
    if problems:
        raise UsageError("; ".join(problems))


def make_agent(spec: str, options: AgentOptions | None = None) -> Agent:
    """The agent ``spec`` names (a validated run configuration's ``agent``); a
    :class:`UsageError` saying how to fix it if this machine cannot run it."""
    kind, rest = agent_kind(spec)
    kind.ready(rest)
    return kind.build(rest, options or AgentOptions())
