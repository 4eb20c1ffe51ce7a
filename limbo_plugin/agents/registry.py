"""Every kind of agent, one entry each: how its spec string is checked and how it is built.

An agent is named by a spec string ``<kind>:<rest>`` (``scripted:verify_first``,
``litellm:openai/gpt-5-mini``). An :class:`AgentKind` says what ``rest`` must be (checking it
with a one-line error that shows the valid form), whether this machine can run it, and builds the
agent, importing its module only then (litellm is slow to import). A new kind of agent is one
module and one entry in :data:`AGENT_KINDS`, or, from another package, an ``AGENT_KINDS``
tuple in an extension module (:mod:`limbo_plugin.extensions`); :func:`all_agent_kinds` has both.

The two checks are apart on purpose. The *form* is checked wherever a spec string comes in (the
command line, an experiment spec): a typo is a spec error. Whether the agent can *run here* —
a harness CLI installed, the options it needs given, a condition it can honour — is checked once
before the first episode (:func:`check_ready`), so an experiment that names harnesses still
collects (``--collect-only`` states its size) on a machine without them, and a run stops at once
with the command that installs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, TypeGuard

from limbo_plugin.agents.base import Agent
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.scripted import POLICIES
from limbo_plugin.errors import UsageError
from limbo_plugin.extensions import declared, unique
from limbo_plugin.extras import require
from limbo_plugin.scrubbing import learn_options

if TYPE_CHECKING:
    from limbo_plugin.agents.preflight import Endpoint


@dataclass(frozen=True)
class AgentPlan:
    """An agent as a run will use it: its spec string, the condition it runs under and the
    names of the model options it is given — what :func:`check_ready` needs to judge whether
    the episodes can run at all, before the first one starts."""

    agent: str
    condition: str = "vanilla"
    options: frozenset[str] = field(default_factory=frozenset)
    values: str = "{}"
    """The model options themselves, as sorted JSON (hashable): where the preflight request
    goes (``api_base``) and with which credentials."""

    @classmethod
    def of(cls, agent: str, condition: str = "vanilla",
           model_options: Mapping[str, object] | None = None) -> AgentPlan:
        import json

        return cls(agent, condition, frozenset(model_options or {}),
                   json.dumps(dict(model_options or {}), sort_keys=True, default=str))

    def model_options(self) -> dict[str, Any]:
        import json

        values: dict[str, Any] = json.loads(self.values)
        return values


def _always_ready(rest: str, plan: AgentPlan) -> None:
    """Most agents need nothing installed beyond Limbo itself."""


@dataclass(frozen=True)
class AgentKind:
    """``prefix`` names the kind, ``form`` shows its spec strings in error messages, ``check``
    raises :class:`UsageError` when ``rest`` is not valid, ``build`` makes the agent, and
    ``ready`` raises :class:`UsageError` when this machine cannot run it (saying how to fix
    that), ``extra`` names the pip extra it needs beyond the core install
    (:mod:`limbo_plugin.extras`), and ``prompt_conditions`` says whether the agent honours a
    condition that changes what the model is told (a harness keeps its own system prompt and
    conversation, so under ``aware`` or a paraphrase it would silently measure ``vanilla``)."""

    prefix: str
    form: str
    check: Callable[[str], None]
    build: Callable[[str, AgentOptions], Agent]
    ready: Callable[[str, AgentPlan], None] = _always_ready
    extra: str | None = None
    prompt_conditions: bool = True
    endpoint: Callable[[str, AgentPlan], Endpoint | None] | None = None
    """The model endpoint the agent will call (``None``: none), for the run's preflight: one
    real request before the first episode (:mod:`limbo_plugin.agents.preflight`)."""
    model: Callable[[str], str] | None = None
    """The model an agent of this kind calls, from the rest of its spec string (``None``: it
    calls none): what ``limbo plan`` prices and the tables' model column shows."""
    harness: Callable[[str], str] = lambda rest: "minimal"
    """The harness (scaffold) it runs in: ``minimal`` (Limbo's own loop) unless a production
    harness; ``limbo plan`` takes tokens per episode by it."""


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


def _scaffold_endpoint(rest: str, plan: AgentPlan) -> Endpoint:
    from limbo_plugin.agents.preflight import Endpoint

    options = plan.model_options()
    return Endpoint.of(plan.agent, rest, options, str(options.get("wire") or "chat"))


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


def _harness_ready(rest: str, plan: AgentPlan) -> None:
    """The CLI is installed (``limbo harness install <name>``) or its program is on PATH, and
    the run gives the gateway its model is reached through."""
    from limbo_plugin.agents.harness_install import find_harness, resolve_executable

    name, _, model = rest.partition(":")
    resolve_executable(find_harness(model if name == "command" else name))
    if not plan.options & {"api_base", "base_url"}:
        raise UsageError(f"agent {plan.agent!r} reaches its model through an OpenAI-compatible "
                         "gateway: pass --model-option api_base=URL (or set model_options: "
                         "{api_base: URL} in the experiment)")


def _harness_endpoint(rest: str, plan: AgentPlan) -> Endpoint | None:
    """The gateway a harness CLI reaches its model through, asked with the harness's key and
    wire (starting the CLI itself costs seconds and a sandbox; ``ready`` found it installed)."""
    from limbo_plugin.agents.harness_install import find_harness
    from limbo_plugin.agents.preflight import gateway_request

    name, _, model = rest.partition(":")
    spec = find_harness(model if name == "command" else name)
    options = plan.model_options()
    if name == "command":
        model = str(options.get("model") or spec.model or "")
    return gateway_request(plan.agent, spec, model, options)


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


def _harness_name(rest: str) -> str:
    return rest.partition(":")[0] or "minimal"


def _harness_model(rest: str) -> str:
    _, _, model = rest.partition(":")
    return model or rest


AGENT_KINDS: tuple[AgentKind, ...] = (
    AgentKind("scripted", f"scripted:<policy> ({', '.join(POLICIES)})",
              _check_policy("scripted"), _build_scripted),
    AgentKind("mcp", "mcp:<policy>", _check_policy("mcp"), _build_mcp, extra="mcp"),
    AgentKind("litellm", "litellm:<model>", _check_model, _build_scaffold, extra="llm",
              endpoint=_scaffold_endpoint, model=str),
    AgentKind("harness", HARNESS_FORMS, _check_harness, _build_harness, extra="mcp",
              ready=_harness_ready, prompt_conditions=False, endpoint=_harness_endpoint,
              model=_harness_model, harness=_harness_name),
    AgentKind("python", "python:<module>:<callable>", _check_python, _build_python),
)


@cache
def all_agent_kinds() -> dict[str, AgentKind]:
    """Every kind of agent by prefix: :data:`AGENT_KINDS`, then extension modules' kinds."""
    found = declared("AGENT_KINDS", [__name__], accepts=_is_kind, what="an AgentKind")
    return {prefix: d.value for prefix, d in unique(found, lambda k: k.prefix,
                                                     "agent kind").items()}


def _is_kind(item: object) -> TypeGuard[AgentKind]:
    return isinstance(item, AgentKind)


def agent_kind(spec: str) -> tuple[AgentKind, str]:
    """The kind ``spec`` names and the rest of the spec; :class:`UsageError` if it names none."""
    prefix, _, rest = spec.partition(":")
    kinds = all_agent_kinds()
    if prefix in kinds:
        return kinds[prefix], rest
    raise UsageError(f"unknown agent {spec!r}; valid forms: "
                     + ", ".join(kind.form for kind in kinds.values()))


def _known_kind(agent: str) -> tuple[AgentKind | None, str]:
    prefix, _, rest = agent.partition(":")
    return all_agent_kinds().get(prefix), rest


def calls_model(agent: str) -> bool:
    """Whether the agent ``agent`` calls a model (its kind says; an unknown kind does not)."""
    kind, _ = _known_kind(agent)
    return kind is not None and kind.model is not None


def model_of(agent: str) -> str:
    """The model behind an agent, as its kind says (``litellm:M`` → M, ``harness:H:M`` → M);
    an agent that calls no model, or of a kind not installed here, is named by the rest of its
    spec string (a scripted agent by its policy)."""
    kind, rest = _known_kind(agent)
    if kind is not None and kind.model is not None:
        return kind.model(rest)
    return rest or agent


def harness_of(agent: str) -> str:
    """The harness an agent runs in (``harness:<name>:…`` → name), ``minimal`` otherwise."""
    kind, rest = _known_kind(agent)
    return kind.harness(rest) if kind is not None else "minimal"


def check_agent(spec: str, *, installed: bool = True) -> None:
    """Raise :class:`UsageError`, naming the valid forms, when ``spec`` is not an agent; with
    ``installed``, also when the extra it runs on is missing (``limbo plan`` prices an agent
    without running it, so it checks the form alone)."""
    kind, rest = agent_kind(spec)
    kind.check(rest)
    if installed and kind.extra is not None:
        require(kind.extra, f"agent {spec!r}")


def check_ready(plans: Iterable[AgentPlan | str]) -> None:
    """Raise one :class:`UsageError` naming every agent of ``plans`` this machine or run cannot
    use (each kind's ``ready``, e.g. "harness copilot is not installed: run `limbo harness
    install copilot` …", and a condition the agent cannot honour), so a run stops before its
    first episode rather than failing — or silently mismeasuring — each one. A bare spec string
    is the agent under ``vanilla`` with no model options."""
    problems: dict[str, None] = {}
    for plan in sorted({AgentPlan(p) if isinstance(p, str) else p for p in plans},
                       key=lambda p: (p.agent, p.condition, sorted(p.options))):
        kind, rest = agent_kind(plan.agent)
        try:
            kind.ready(rest, plan)
            if not kind.prompt_conditions:
                _check_condition(kind, plan)
        except UsageError as exc:
            problems[str(exc)] = None
    if problems:
        raise UsageError("; ".join(problems))


def _check_condition(kind: AgentKind, plan: AgentPlan) -> None:
    """An agent that ignores prompt changes may only run under conditions that make none."""
    from limbo_plugin.conditions.base import Condition, PromptChanges
    from limbo_plugin.conditions.registry import all_conditions, find_condition

    if find_condition(plan.condition).prompt == PromptChanges():
        return
    honoured = [d.name if isinstance(d, Condition) else d.form for d in all_conditions()
                if not isinstance(d, Condition) or d.prompt == PromptChanges()]
    raise UsageError(
        f"agent {plan.agent!r} cannot run under condition {plan.condition!r}: {kind.prefix} "
        "agents keep their own system prompt and conversation, so a condition that changes "
        "what the model is told would silently measure the agent without it; valid for "
        f"{kind.prefix} agents: " + ", ".join(honoured))


def make_agent(spec: str, options: AgentOptions | None = None) -> Agent:
    """The agent ``spec`` names (a validated run configuration's ``agent``); a
    :class:`UsageError` saying how to fix it if this machine cannot run it."""
    kind, rest = agent_kind(spec)
    options = options or AgentOptions()
    learn_options(options.model_options)  # its credentials never reach an output
    kind.ready(rest, AgentPlan.of(spec, model_options=options.model_options))
    return kind.build(rest, options)
