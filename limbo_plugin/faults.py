"""The fault transport: the boundary between callers and services, where faults are injected.

A fault attaches to the n-th call that matches a focal write's tool and argument filter. A request
the service rejects anyway gets its real error and leaves the trigger armed. Within an
observation-equivalent group the response bytes and the clock advance do not depend on the hidden
outcome; only whether, when and how often the service executes the request does.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.spec.models import FaultModeSpec, FocalTrigger
from limbo_plugin.toolapi import ToolCall, ToolResult, normalize_arguments, tool_error
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


@dataclass
class FaultReport:
    """What the fault did, for the record (ground truth; never shown to the agent)."""

    mode: str
    fired: bool = False
    t_fired: float | None = None
    request_seq: int | None = None
    origin: str | None = None
    delay_s: float | None = None
    commit_at: float | None = None
    partial_rows: int | None = None
    batch_rows: int | None = None


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
            return ToolResult(copy.deepcopy(body), is_error)
        request = world.open_request(call.name, args, call.origin)
        body, is_error, cost = self._handle(request, definition)
        request.response, request.is_error = body, is_error
        world.clock.advance(cost)
        # A detached copy: reads return the world's own records, which a caller must not alter.
        return ToolResult(copy.deepcopy(body), is_error)

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
            return copy.deepcopy(self.plan.mode.response or {}), True, CALL_COST_S
        error = world.validate(request.tool, request.args)
        if error is not None:
            request.fate = "rejected"
            return error, True, CALL_COST_S
        if self._should_fire(request):
            return self._fire(request, definition)
        result = world.execute(request)
        return self._settle(request, result), result.error is not None, CALL_COST_S

    def _should_fire(self, request: Request) -> bool:
        if self.plan is None or self.report.fired or self.plan.trigger is None:
            return False
        if not self.plan.trigger.matches(request.tool, request.args):
            return False
        self._matches += 1
        return self._matches == self.plan.trigger.n

    @staticmethod
    def _settle(request: Request, result: ExecutionResult) -> dict[str, Any]:
        if result.error is not None:
            request.fate = "rejected"
            return result.error
        request.fate = "replayed" if result.replayed else "committed"
        request.record_ids = result.record_ids or _ids_in(result.body)
        return result.body or {}

    def _fire(self, request: Request, definition: ToolDefinition
              ) -> tuple[dict[str, Any], bool, float]:
        assert self.plan is not None
        mode, world, now = self.plan.mode, self.world, self.world.clock.now
        self.fired_request = request
        request.fault = mode.name
        report = self.report
        report.fired, report.t_fired, report.request_seq = True, now, request.seq
        report.origin = request.origin
        body: dict[str, Any] | None = None
        if mode.execute == "never":
            request.fate = "not_executed"
            if mode.outage_window_s:
                self._outages[definition.service] = now + mode.outage_window_s
        elif mode.execute == "now":
            body = self._settle(request, world.execute(request))
        elif mode.execute == "late":
            delay = self.plan.late_delay()
            request.fate, request.due_at = "in_flight", now + delay
            report.delay_s, report.commit_at = delay, now + delay
            world.clock.schedule(now + delay, lambda: self._late_commit(request),
                                 f"late commit of request {request.seq}")
        elif mode.execute == "partial":
            batch = definition.contract.batch_field
            total = len(request.args[batch]) if batch else 0
            rows = self.plan.partial_rows(total)
            report.partial_rows, report.batch_rows = rows, total
            request.rows_done, request.rows_total = rows, total
            if rows:
                result = world.execute(request, row_stop=rows)
                request.record_ids = result.record_ids
            request.fate = "partial" if rows else "not_executed"
        elif mode.execute == "now_and_redeliver":
            body = self._settle(request, world.execute(request))
            at = now + (mode.redelivery_after_s or 2.0)
            world.clock.schedule(at, lambda: self._redeliver(request),
                                 f"redelivery of request {request.seq}")
        return self._respond(mode, request, definition, body)

    def _respond(self, mode: FaultModeSpec, request: Request, definition: ToolDefinition,
                 body: dict[str, Any] | None) -> tuple[dict[str, Any], bool, float]:
        cost = mode.cost_s
        if mode.response_kind == "error" or body is None:
            return copy.deepcopy(mode.response or {}), True, cost
        if mode.response_kind == "drifted":
            drifted = {"object": definition.contract.record_noun.replace(" ", "_"),
                       "data": body, "api_version": mode.drifted_api_version}
            return drifted, False, cost
        return body, False, cost

    def _late_commit(self, request: Request) -> None:
        result = self.world.execute(request, origin="late")
        self._settle(request, result)

    def _redeliver(self, request: Request) -> None:
        result = self.world.execute(request, origin="redelivery", sub="r")
        request.redelivered_ids = result.record_ids


def _ids_in(body: dict[str, Any] | None) -> list[str]:
    if not body:
        return []
    if isinstance(body.get("ids"), list):
        return [str(i) for i in body["ids"]]
    return [str(body["id"])] if "id" in body else []
