"""The agent protocol and the session through which an agent acts on an episode.

Scripted policies, the litellm scaffold and (later) harness adapters all implement :class:`Agent`.
An agent sees the instruction and the tools; it acts only through :meth:`AgentSession.call`,
which goes down through the conditions and the fault transport to the world.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from limbo_plugin.conditions.base import PromptChanges
from limbo_plugin.errors import EpisodeOver, LimboError
from limbo_plugin.records import HarnessRun, TraceEntry, Usage
from limbo_plugin.toolapi import (
    RefusedArguments,
    ToolCall,
    ToolCaller,
    ToolResult,
    normalize_arguments,
    parsed_arguments,
    safe_json,
)

if TYPE_CHECKING:
    from limbo_plugin.contracts import ToolDefinition
    from limbo_plugin.tasks import TaskInstance
    from limbo_plugin.world.world import World

TOOL_CALL_BUDGET = 40


class InfrastructureError(LimboError):
    """The agent could not run for reasons outside it (provider down, rate limits exhausted).

    Such an episode is recorded as an error, excluded from statistics and re-run on resume.
    """


@runtime_checkable
class Agent(Protocol):
    name: str

    def run(self, session: AgentSession) -> None:
        """Act on the episode until done; return, or let :class:`EpisodeOver` propagate."""


@dataclass
class TraceLog:
    """The episode trace: agent calls and harness calls, in the order they started."""

    entries: list[TraceEntry] = field(default_factory=list)
    serving: int | None = None
    """The number of the agent call in progress: what a harness call made now serves."""
    _next: int = 0

    def reserve(self) -> int:
        self._next += 1
        return self._next

    def add(self, index: int, t_start: float, t_end: float, origin: str, call: ToolCall,
            result: ToolResult) -> None:
        # What the agent sent is kept as safe, bounded JSON: the record must serialise whatever
        # the agent sent (a lone surrogate, NaN, an object nested hundreds deep).
        name = call.name if isinstance(call.name, str) else repr(call.name)
        self.entries.append(TraceEntry(index=index, t_start=t_start, t_end=t_end, origin=origin,
                                       tool=safe_json(name[:200]),
                                       arguments=safe_json(call.arguments),
                                       response=safe_json(result.content),
                                       is_error=result.is_error))

    def ordered(self) -> list[TraceEntry]:
        return sorted(self.entries, key=lambda e: e.index)


class HarnessTracer:
    """Wraps the transport and records every call a condition makes on the agent's behalf."""

    def __init__(self, inner: ToolCaller, world: World, trace: TraceLog) -> None:
        self.inner, self.world, self.trace = inner, world, trace

    def call(self, call: ToolCall) -> ToolResult:
        if call.origin != "harness":
            return self.inner.call(call)
        if call.seq is None:  # numbered in the sub-namespace of the agent call it serves
            call = replace(call, seq=self.trace.serving)
        index, start = self.trace.reserve(), self.world.clock.now
        result = self.inner.call(call)
        self.trace.add(index, start, self.world.clock.now, "harness", call, result)
        return result


class AgentSession:
    """One episode as an agent sees it: the instruction, the tools, a way to call them, and
    what the condition changes in the prompt of a model-backed agent (:attr:`prompt`)."""

    def __init__(self, *, task: TaskInstance, instruction: str, tools: list[ToolDefinition],
                 caller: ToolCaller, world: World, trace: TraceLog,
                 prompt: PromptChanges | None = None, budget: int = TOOL_CALL_BUDGET,
                 fault_fired: Callable[[], bool] | None = None,
                 episode_id: str | None = None) -> None:
        self.shared_task = task
        """The cached task instance, for Limbo's own agents, which only read it; an agent's code
        gets :attr:`task`, a private copy."""
        self.episode_id = episode_id
        self.instruction = instruction
        self.shared_tools = tools
        """The world's tool definitions, for Limbo's own agents and servers, which only read
        them; an agent's code gets :attr:`tools`, private copies."""
        self._task_copy: TaskInstance | None = None
        self._tools_copy: list[ToolDefinition] | None = None
        self.prompt = prompt or PromptChanges()
        self.budget = budget
        self.usage = Usage()
        self.calls = 0
        self.over = False
        self.end_reason: str | None = None
        self.focal_call_index: int | None = None
        self.harness: HarnessRun | None = None
        self._caller = caller
        self._world = world
        self._trace = trace
        self._fault_fired = fault_fired
        self._tools_by_name = {t.name: t for t in tools}

    # Nothing an agent does reaches another episode: the task instance and the tool schemas
    # are cached per worker (and the world validates calls with those schemas), so an agent
    # that edits what it was given (a schema cleaner stripping ``pattern``, a careless
    # ``task.required.clear()``) edits its own copies. Copied on first use only.
    @property
    def task(self) -> TaskInstance:
        """This episode's task instance (a private copy)."""
        if self._task_copy is None:
            self._task_copy = copy.deepcopy(self.shared_task)
        return self._task_copy

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools the agent may call (private copies: their schemas are the agent's to
        edit)."""
        if self._tools_copy is None:
            self._tools_copy = copy.deepcopy(self.shared_tools)
        return self._tools_copy

    def tool(self, name: str) -> ToolDefinition | None:
        """The tool ``name`` among :attr:`tools` (a private copy), or ``None``."""
        if name not in self._tools_by_name:
            return None
        return next(t for t in self.tools if t.name == name)

    def shared_tool(self, name: str) -> ToolDefinition | None:
        """The world's definition of ``name``, for Limbo's own agents (read only)."""
        return self._tools_by_name.get(name)

    @property
    def now(self) -> float:
        return self._world.clock.now

    @property
    def remaining(self) -> int:
        return max(0, self.budget - self.calls)

    def call(self, name: str, arguments: Any = None, *, call_id: str | None = None
             ) -> ToolResult:
        """Call tool ``name``. ``arguments`` may be a mapping or the JSON text a model emitted;
        malformed ones come back as a tool error, as from a real API. Raises
        :class:`EpisodeOver` once the episode has ended."""
        if self.over:
            raise EpisodeOver(self.end_reason or "episode over")
        fired_before = bool(self._fault_fired and self._fault_fired())
        index, start = self._trace.reserve(), self._world.clock.now
        seq = self.calls + 1  # counted here, so a call a condition intercepts keeps its number
        self._trace.serving = seq
        call = ToolCall(name=name, arguments=_own_copy(parsed_arguments(arguments)),
                        origin="agent", call_id=call_id, seq=seq)
        result = self._caller.call(call)
        self._trace.add(index, start, self._world.clock.now, "agent", call, result)
        self.calls += 1
        if not fired_before and self._fault_fired and self._fault_fired():
            self.focal_call_index = index
        if self._world.final is not None:
            self.end("finished")
        elif self.calls >= self.budget:
            self.end("budget")
        return result

    def end(self, reason: str) -> None:
        if not self.over:
            self.over, self.end_reason = True, reason


def _own_copy(arguments: Any) -> Any:
    """The arguments as they were when the call was made: what the agent changes in its own
    dict afterwards reaches neither the world nor the record. What cannot be copied is kept
    as a safe rendering (the world answers it with a tool error).

    Arguments nested too deep to copy (hundreds of levels) go as :class:`RefusedArguments`:
    their rendering is cut at a depth the world accepts, so sent as the arguments it would be
    checked as a different, shallower call than the agent made."""
    try:
        return _json_copy(arguments)
    except Exception:  # an object that refuses to be copied: a rendering of it, never a crash
        rendering = safe_json(arguments)
        try:
            _, problem = normalize_arguments(arguments)
        except Exception:
            return rendering
        return rendering if problem is None else RefusedArguments(rendering, problem)


_ATOMS = (str, int, float, bool, type(None))


def _json_copy(value: Any) -> Any:
    """A deep copy, fast for the JSON values nearly every call holds."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    return copy.deepcopy(value)
