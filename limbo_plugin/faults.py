"""The fault transport: the boundary between callers and services, where faults are injected.

A fault attaches to the n-th call that matches a focal write's tool and argument filter. A request
the service rejects anyway gets its real error and leaves the trigger armed. Within an
observation-equivalent group the response bytes and the clock advance do not depend on the hidden
outcome; only whether, when and how often the service executes the request does.

That one difference is a mode's ``execute`` kind, and each kind is one :class:`Executor` in
:data:`EXECUTORS` (or in an extension module's ``EXECUTORS``, :mod:`limbo_plugin.extensions`):
its function sets the request's fate (a name in the fates table, :mod:`limbo_plugin.world.fates`,
whose flags tell the operator and the oracles what became of the request), fills the
fields of the :class:`FaultReport` it is about, and schedules whatever happens later. Everything
else about a mode (its response, cost, family) is data in ``specs/faults/modes.yaml``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeGuard

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.extensions import declared, unique
from limbo_plugin.records import FaultReport
from limbo_plugin.spec.models import FaultModeSpec, FocalTrigger
from limbo_plugin.toolapi import (
    ToolCall,
    ToolResult,
    detached,
    normalize_arguments,
    tool_error,
)
from limbo_plugin.world.fates import fate_of
from limbo_plugin.world.seeds import rng_for
from limbo_plugin.world.world import ExecutionResult, Request, World

CALL_COST_S = 1.0


@dataclass(frozen=True)
class FaultPlan:
    mode: FaultModeSpec
    trigger: FocalTrigger | None
    world_seed: int

    def late_delay(self) -> float:
        """Seconds from sending to the late commit: fixed, or log-uniform from the world seed."""
        mode = self.mode
        if mode.late_delay == "fixed":
            return float(mode.late_delay_s or 0.0)
        low, high = mode.late_delay_range_s or (40.0, 7200.0)
        rng = rng_for(self.world_seed, "late_delay")
        return round(math.exp(rng.uniform(math.log(low), math.log(high))), 3)

    def partial_rows(self, total: int) -> int:
        """How many of ``total`` rows a partial batch commits: k in [1, total − 1]."""
        if total < 2:
            return 0
        return rng_for(self.world_seed, f"partial:{total}").randint(1, total - 1)


class FaultTransport:
    """Implements :class:`~limbo_plugin.toolapi.ToolCaller` in front of a :class:`World`."""

    def __init__(self, world: World, plan: FaultPlan | None = None) -> None:
        self.world = world
        self.plan = plan if plan is not None and plan.trigger is not None else None
        self.report = FaultReport(mode=plan.mode.name if plan else "none")
        self.fired_request: Request | None = None
        self._matches = 0
        self._outages: dict[str, float] = {}

    # -- the ToolCaller API ----------------------------------------------------------------------
    def call(self, call: ToolCall) -> ToolResult:
        world = self.world
        definition = world.tools.get(call.name) if isinstance(call.name, str) else None
        if definition is None:
            world.clock.advance(CALL_COST_S)
            available = ", ".join(world.tools)
            return tool_error("unknown_tool",
                              f"unknown tool {call.name!r}; available tools: {available}")
        args, problem = normalize_arguments(call.arguments)
        if args is None:
            world.clock.advance(CALL_COST_S)
            return tool_error("invalid_arguments", f"{call.name}: {problem}")
        if world.is_general(call.name):
            body, is_error = world.call_general(call.name, args)
            return ToolResult(detached(body), is_error)
        request = world.open_request(call.name, args, call.origin, call.seq)
        body, is_error, cost = self._handle(request, definition)
        request.response, request.is_error = body, is_error
        world.clock.advance(cost)
        # A detached copy: reads return the world's own records, which a caller must not alter.
        return ToolResult(detached(body), is_error)

    def start_outage(self, service: str, *, until: float) -> None:
        """Refuse every call to ``service`` until simulated time ``until``."""
        self._outages[service] = until

    def sleep(self, seconds: float) -> None:
        """Let simulated time pass without a call (middleware backoff)."""
        self.world.clock.advance(seconds)

    @property
    def fired(self) -> bool:
        return self.report.fired

    # -- internals -----------------------------------------------------------------------------
    def _handle(self, request: Request, definition: ToolDefinition
                ) -> tuple[dict[str, Any], bool, float]:
        world = self.world
        until = self._outages.get(definition.service)
        if until is not None and world.clock.now < until and self.plan is not None:
            request.fate = "not_executed"
            return detached(self.plan.mode.response or {}), True, CALL_COST_S
        error = world.validate(request.tool, request.args)
        if error is not None:
            request.fate = "rejected"
            return error, True, CALL_COST_S
        if self._should_fire(request):
            return self._fire(request, definition)
        result = world.execute(request)
        return self.settle(request, result), result.error is not None, CALL_COST_S

    def _should_fire(self, request: Request) -> bool:
        if self.plan is None or self.report.fired or self.plan.trigger is None:
            return False
        if not self.plan.trigger.matches(request.tool, request.args):
            return False
        self._matches += 1
        return self._matches == self.plan.trigger.n

    @staticmethod
    def settle(request: Request, result: ExecutionResult) -> dict[str, Any]:
        """Record the outcome of an execution on ``request``; the body the service answers."""
        if result.error is not None:
            request.fate = "rejected"
            return result.error
        request.fate = "replayed" if result.replayed else "committed"
        request.record_ids = result.record_ids or _ids_in(result.body)
        return result.body or {}

    def _fire(self, request: Request, definition: ToolDefinition
              ) -> tuple[dict[str, Any], bool, float]:
        assert self.plan is not None
        mode, now = self.plan.mode, self.world.clock.now
        self.fired_request = request
        request.fault = mode.name
        report = self.report
        report.fired, report.t_fired, report.request_seq = True, now, request.seq
        report.origin = request.origin
        body = executors()[mode.execute](Firing(self, self.plan, request, definition, now))
        fate_of(request.fate)  # an executor's fate must be declared: a one-line error if not
        return self._respond(mode, request, definition, body)

    def _respond(self, mode: FaultModeSpec, request: Request, definition: ToolDefinition,
                 body: dict[str, Any] | None) -> tuple[dict[str, Any], bool, float]:
        cost = mode.cost_s
        if mode.response_kind == "error" or body is None:
            return detached(mode.response or {}), True, cost
        if mode.response_kind == "drifted":
            drifted = {"object": definition.contract.record_noun.replace(" ", "_"),
                       "data": body, "api_version": mode.drifted_api_version}
            return drifted, False, cost
        return body, False, cost

    def commit_late(self, request: Request) -> None:
        """The in-flight ``request`` reaches the service now."""
        result = self.world.execute(request, origin="late")
        self.settle(request, result)

    def redeliver(self, request: Request) -> None:
        """The transport delivers ``request`` a second time, now."""
        result = self.world.execute(request, origin="redelivery", sub="r")
        request.redelivered_ids = result.record_ids


# -- executors: one per ``execute`` kind -------------------------------------------------------
@dataclass(frozen=True)
class Firing:
    """What an executor works on: the faulted request at time ``now``, under ``plan``."""

    transport: FaultTransport
    plan: FaultPlan
    request: Request
    definition: ToolDefinition
    now: float

    @property
    def world(self) -> World:
        return self.transport.world

    @property
    def report(self) -> FaultReport:
        return self.transport.report


Execute = Callable[[Firing], dict[str, Any] | None]
"""Carries out a faulted request; returns the body of a success the agent sees, or ``None``
when the agent gets the mode's error response."""


@dataclass(frozen=True)
class Executor:
    """One way of executing a faulted request: the ``execute:`` word a fault mode names in
    ``specs/faults/modes.yaml``, and the function that carries it out (a fate it sets that is
    not Limbo's is declared in a ``FATES`` tuple beside it)."""

    kind: str
    run: Execute


def execute_never(firing: Firing) -> None:
    """The request never reaches the service; an outage also refuses the service's next calls."""
    firing.request.fate = "not_executed"
    window = firing.plan.mode.outage_window_s
    if window:
        firing.transport.start_outage(firing.definition.service, until=firing.now + window)


def execute_now(firing: Firing) -> dict[str, Any]:
    """The service executes the request as it arrives (only the answer is faulted)."""
    return firing.transport.settle(firing.request, firing.world.execute(firing.request))


def execute_late(firing: Firing) -> None:
    """The request stays in flight and executes after the plan's delay, whatever happens."""
    request, now, delay = firing.request, firing.now, firing.plan.late_delay()
    request.fate, request.due_at = "in_flight", now + delay
    firing.report.delay_s, firing.report.commit_at = delay, now + delay
    transport = firing.transport
    firing.world.clock.schedule(now + delay, lambda: transport.commit_late(request),
                                f"late commit of request {request.seq}")


def execute_partial(firing: Firing) -> None:
    """A batch write executes its first k of n rows (k from the world seed), then fails."""
    request = firing.request
    batch = firing.definition.contract.batch_field
    total = len(request.args[batch]) if batch else 0
    rows = firing.plan.partial_rows(total)
    firing.report.partial_rows, firing.report.batch_rows = rows, total
    request.rows_done, request.rows_total = rows, total
    if rows:
        result = firing.world.execute(request, row_stop=rows)
        request.record_ids = result.record_ids
    request.fate = "partial" if rows else "not_executed"


def execute_now_and_redeliver(firing: Firing) -> dict[str, Any]:
    """The request executes now, and the transport delivers the same request again later."""
    request, transport = firing.request, firing.transport
    body = transport.settle(request, firing.world.execute(request))
    at = firing.now + (firing.plan.mode.redelivery_after_s or 2.0)
    firing.world.clock.schedule(at, lambda: transport.redeliver(request),
                                f"redelivery of request {request.seq}")
    return body


EXECUTORS = (
    Executor("never", execute_never),
    Executor("now", execute_now),
    Executor("late", execute_late),
    Executor("partial", execute_partial),
    Executor("now_and_redeliver", execute_now_and_redeliver),
)


@cache
def executors() -> dict[str, Execute]:
    """Every ``execute`` kind and its function: this module's, then extension modules'."""
    found = declared("EXECUTORS", [__name__], accepts=_is_executor, what="an Executor")
    return {kind: d.value.run for kind, d in unique(found, lambda e: e.kind, "executor").items()}


def _is_executor(item: object) -> TypeGuard[Executor]:
    return isinstance(item, Executor)


def expected_failure(mode: FaultModeSpec, focal: ToolDefinition | None) -> str | None:
    """Why no client-side policy can be exactly-once here, or ``None`` if one can: the mode
    defeats every client without a key, and the focal write is non-idempotent and takes none."""
    if not mode.exactly_once_needs_key or focal is None:
        return None
    contract = focal.contract
    if contract.idempotency == "non_idempotent" and contract.key_param is None:
        return (f"{mode.name} of {focal.name}, which accepts no idempotency key: no "
                "client-side policy can be exactly-once")
    return None


def _ids_in(body: dict[str, Any] | None) -> list[str]:
    if not body:
        return []
    if isinstance(body.get("ids"), list):
        return [str(i) for i in body["ids"]]
    return [str(body["id"])] if "id" in body else []
