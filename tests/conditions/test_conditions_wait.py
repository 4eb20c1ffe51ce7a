"""``wait_<Δ>``: vbr with the read-back deferred until Δ plus the read path's lag after the
original request was sent (SPEC §6.2, paper §6.3)."""

from __future__ import annotations

import copy
import itertools
import statistics
from typing import Any

import pytest
from condkit import failures, harness_calls, run, sweep, world
from condkit import worlds as all_worlds

from limbo_plugin.conditions.base import HarnessEnv
from limbo_plugin.conditions.wait import wait_bound, wait_then_verify
from limbo_plugin.faults import FaultPlan
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.models import FocalTrigger
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolCall, ToolResult


def _verifiable(registry: SpecRegistry, modes: tuple[str, ...]) -> list:
    return [w for w in all_worlds(registry, modes) if w.non_idempotent and w.verification != "none"]


@pytest.mark.parametrize("delta", [90, 91, 120, 300, 3600])
def test_a_bound_at_least_the_fixed_delay_is_exactly_once(registry: SpecRegistry,
                                                          delta: int) -> None:
    ws = _verifiable(registry, ("timeout_late",))
    assert len(ws) >= 25
    bad = [(w, r) for w, r in sweep(ws, f"wait_{delta}") if not r.eos]
    assert not bad, failures(bad)


@pytest.mark.parametrize("delta", [0, 30, 60, 89])
def test_a_bound_below_the_fixed_delay_duplicates(registry: SpecRegistry, delta: int) -> None:
    for w, record in sweep(_verifiable(registry, ("timeout_late",)), f"wait_{delta}"):
        assert record.duplicates >= 1, w


@pytest.mark.parametrize("delta", [60, 300, 900, 3600])
def test_heavy_tail_exactly_once_in_exactly_the_worlds_within_the_bound(registry: SpecRegistry,
                                                                        delta: int) -> None:
    records = list(sweep(_verifiable(registry, ("timeout_late_tail",)), f"wait_{delta}"))
    delays = [r.fault.delay_s for _, r in records]
    assert None not in delays
    within = [d is not None and d <= delta for d in delays]
    assert [r.eos for _, r in records] == within
    assert any(within) and not all(within)  # both sides are exercised


def test_waiting_costs_simulated_time_that_grows_with_the_bound(registry: SpecRegistry) -> None:
    ws = _verifiable(registry, ("timeout_late_tail",))
    means = []
    for delta in (0, 60, 300, 900, 3600):
        records = [r for _, r in sweep(ws, f"wait_{delta}")]
        means.append((statistics.mean(r.sim_seconds for r in records),
                      statistics.mean(r.harness_seconds for r in records)))
    assert means == sorted(means)
    assert all(a < b for (a, _), (b, _) in itertools.pairwise(means))
    assert means[-1][1] > 3000


def test_the_lag_of_an_eventual_read_path_is_added_to_the_bound(registry: SpecRegistry) -> None:
    record = run(world(registry, "hotfix_long", "email", "timeout_late"), "wait_90")
    read = harness_calls(record)[0]
    first = next(e for e in record.trace if e.tool == "email_send")
    assert read.tool == "email_search_sent"
    assert read.t_start == pytest.approx(first.t_start + 90 + 120, abs=0.01)
    assert record.eos


def test_writes_without_a_read_back_are_not_helped(registry: SpecRegistry) -> None:
    record = run(world(registry, "cross_post", "post_x", "timeout_late"), "wait_3600")
    assert record.duplicates == 1 and not harness_calls(record)


def test_wait_names() -> None:
    assert wait_bound("wait_90") == 90 and wait_bound("wait_0") == 0
    assert wait_bound("wait_") is None and wait_bound("guard") is None


class LosesFirstRequest:
    """Loses the first request of ``tool`` before it reaches the service, answering with the
    world's own ``timeout_pre`` response after its cost: a second ambiguous answer in a world
    whose transport already injects a late commit on the next one."""

    def __init__(self, inner: Any, box: Sandbox, tool: str) -> None:
        self.inner, self.box, self.tool, self.lost = inner, box, tool, False

    def call(self, call: ToolCall) -> ToolResult:
        if call.name != self.tool or self.lost:
            return self.inner.call(call)
        self.lost = True
        mode = self.box.registry.fault_mode("timeout_pre")
        self.box.world.clock.advance(mode.cost_s)
        return ToolResult(copy.deepcopy(mode.response or {}), is_error=True)


def test_the_bound_runs_from_every_unknown_request_not_only_the_first(registry: SpecRegistry
                                                                     ) -> None:
    """Two identical requests with unknown outcomes: the first was lost, the second is in
    flight. Reading back Δ + lag after the *first* was sent would miss the second and send a
    third (a duplicate); waiting until Δ + lag after the latest unknown one is exactly-once for
    every in-flight delay up to Δ, which is what the bound promises (see docs/decisions.md)."""
    late = FaultPlan(mode=registry.fault_mode("timeout_late"),
                     trigger=FocalTrigger(tool="tickets_create"), world_seed=0)
    box = Sandbox(["tickets"], fault=late, registry=registry)
    env = HarnessEnv(tools=dict(box.world.tools), world=box.world)
    harness = wait_then_verify(LosesFirstRequest(box.transport, box, "tickets_create"), env, 90)
    create = ToolCall("tickets_create", {"project": "OPS", "title": "[SEV2] api: 5xx",
                                         "description": "error rate above 5%"})
    first = harness.call(create)  # lost: sent at 0, answered at 30
    second = harness.call(create)  # read back at 90 (absent), sent: in flight for 90 s
    in_flight = box.world.requests[-1]
    assert first.error_type == second.error_type == "timeout"
    assert in_flight.fate == "in_flight" and in_flight.due_at is not None
    first_bound = 0 + 90
    assert in_flight.due_at > box.now > first_bound, "the two readings differ in this world"
    third = harness.call(create)
    reads = [r for r in box.world.requests if r.tool == "tickets_list"]
    assert reads[-1].t_sent == pytest.approx(in_flight.t_sent + 90, abs=0.01)
    assert not third.is_error and third.content["id"] == in_flight.record_ids[0]
    box.world.finish_in_flight()
    assert [e.tool for e in box.ledger.effects] == ["tickets_create"], "exactly once"
