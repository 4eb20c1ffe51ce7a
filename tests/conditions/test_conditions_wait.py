"""``wait_<Δ>``: vbr with the read-back deferred until Δ plus the read path's lag after the
original request was sent (SPEC §6.2, paper §6.3)."""

from __future__ import annotations

import itertools
import statistics

import pytest
from condkit import failures, harness_calls, run, sweep, world
from condkit import worlds as all_worlds

from limbo_plugin.conditions.wait import wait_bound
from limbo_plugin.spec.registry import SpecRegistry


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
