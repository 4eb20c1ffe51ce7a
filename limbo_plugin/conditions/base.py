"""How a condition declares itself, what middleware is given, and the base it builds on.

A condition module declares its conditions in a module-level ``CONDITIONS`` tuple of
:class:`Condition` (one name) and :class:`ConditionPattern` (a family of names such as
``wait_<seconds>``); :mod:`~limbo_plugin.conditions.registry` finds them. A declaration says
what the condition wraps around the transport (nothing, for a prompt-only condition), whether
it reads ground truth, and what it changes in a model-backed agent's prompt.

A middleware sits where a framework's tool-execution layer sits: between the agent and the
service. It may read the tool contracts and let simulated time pass; it may not read the world.
:class:`HarnessEnv` enforces that structurally: it keeps only the clock of the world it is built
from, so a middleware holding an env can sleep and tell the time but cannot reach the ledger, the
request log or the key store. Only the oracle conditions are handed ``ground_truth``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any

from limbo_plugin.contracts import GENERAL_TOOLS, ToolDefinition
from limbo_plugin.toolapi import ToolCall, ToolCaller, ToolResult

if TYPE_CHECKING:
    from limbo_plugin.world.clock import VirtualClock
    from limbo_plugin.world.world import World


@dataclass(frozen=True)
class PromptChanges:
    """What a condition changes in what a model-backed agent is told (SPEC §6.2).

    ``system_replacement`` replaces the scaffold's system prompt (e.g. a paraphrase of it),
    ``system_addition`` is appended to it after a blank line, and ``after_tool_error`` is sent
    as a user message after every turn in which a tool call returned an error.
    """

    system_addition: str | None = None
    system_replacement: str | None = None
    after_tool_error: str | None = None

    def system_prompt(self, base: str) -> str:
        """The system prompt under this condition, given the scaffold's own ``base``."""
        prompt = base if self.system_replacement is None else self.system_replacement
        return prompt if self.system_addition is None else f"{prompt}\n\n{self.system_addition}"


Builder = Callable[[ToolCaller, "HarnessEnv"], ToolCaller]
"""Wraps middleware around the caller below it (the traced fault transport)."""


@dataclass(frozen=True)
class Condition:
    """One condition: its name and what it changes (see the module docstring).

    ``wraps`` is ``None`` for a prompt-only condition: at the transport level it is the
    transport itself. Only a condition with ``reads_ground_truth`` is handed the world.
    """

    name: str
    description: str
    wraps: Builder | None = None
    reads_ground_truth: bool = False
    prompt: PromptChanges = PromptChanges()

    def build(self, transport: ToolCaller, env: HarnessEnv) -> ToolCaller:
        """The caller the agent's calls go through under this condition."""
        return transport if self.wraps is None else self.wraps(transport, env)


@dataclass(frozen=True)
class ConditionPattern:
    """A family of conditions named by a pattern; ``form`` shows it (``wait_<seconds>``) and
    ``resolve`` returns the condition a name stands for, or ``None`` if it is not one."""

    form: str
    description: str
    resolve: Callable[[str], Condition | None]


@dataclass
class HarnessEnv:
    """The harness's view of an episode.

    ``tools`` carry the effective contracts; :meth:`sleep` and :meth:`sleep_until` let simulated
    time pass (backoff, deferred verification); :attr:`now` tells the time. ``world`` is taken
    only for its clock and is not kept. ``ground_truth`` is the world itself and is set only for
    the oracle conditions, which are reference points that may read what no real client can.
    """

    tools: dict[str, ToolDefinition]
    world: InitVar[World]
    ground_truth: World | None = None
    _clock: VirtualClock = field(init=False, repr=False)

    def __post_init__(self, world: World) -> None:
        self._clock = world.clock

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._clock.advance(seconds)

    def sleep_until(self, t: float) -> None:
        """Let time pass until ``t`` (no-op if it has passed); events due at ``t`` fire."""
        if t > self._clock.now:
            self._clock.advance_to(t)

    @property
    def now(self) -> float:
        return self._clock.now


class Middleware:
    """A condition that wraps an inner :class:`ToolCaller` and is one itself.

    Subclasses implement :meth:`call`. Calls a middleware makes on the agent's behalf go through
    :meth:`harness_call` with ``origin="harness"``, so the trace shows them as the harness's and
    the recovery-behaviour coder, which reads only the agent's own calls, is not misled. A call
    the middleware merely forwards (possibly rewritten, e.g. with a key attached) stays the
    agent's: it is the agent's request, one for one.

    :attr:`harness_seconds` is the simulated time this middleware and every middleware inside it
    spent on their own (sleeps and own calls); the episode runner reads it from the outermost one.
    """

    def __init__(self, inner: ToolCaller, env: HarnessEnv) -> None:
        self.inner = inner
        self.env = env
        self._own_seconds = 0.0

    def call(self, call: ToolCall) -> ToolResult:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def harness_seconds(self) -> float:
        return self._own_seconds + float(getattr(self.inner, "harness_seconds", 0.0))

    def harness_call(self, name: str, arguments: Any) -> ToolResult:
        """Call ``name`` as the harness (traced with origin ``harness``), timing it."""
        start = self.env.now
        result = self.inner.call(ToolCall(name=name, arguments=arguments, origin="harness"))
        self._own_seconds += self.env.now - start
        return result

    def resend(self, call: ToolCall) -> ToolResult:
        """Send the agent's ``call`` again, as the harness (a transparent retry)."""
        return self.harness_call(str(call.name), call.arguments)

    def pause(self, seconds: float) -> None:
        start = self.env.now
        self.env.sleep(seconds)
        self._own_seconds += self.env.now - start

    def pause_until(self, t: float) -> None:
        start = self.env.now
        self.env.sleep_until(t)
        self._own_seconds += self.env.now - start

    def definition(self, call: ToolCall) -> ToolDefinition | None:
        """The contract of a service tool ``call`` names (``None`` for general or unknown tools)."""
        name = call.name
        if not isinstance(name, str) or name in GENERAL_TOOLS:
            return None
        return self.env.tools.get(name)
