"""``sdk_retry`` and ``rules``: transparent retries below the agent (SPEC §6.2, paper §6.5).

The agent is ``no_retry``, the twin of ``blind_retry`` that never re-issues by itself, so every
re-send in these episodes is the harness's.
"""

from __future__ import annotations

import itertools

import pytest
from condkit import (
    LOST_ACK,
    agent_calls,
    failures,
    harness_calls,
    run,
    sweep,
    world,
    worlds,
)

from limbo_plugin.spec.registry import SpecRegistry

NO_RETRY = "scripted:no_retry"


def _lost_ack_on_keyless_non_idempotent_writes(registry: SpecRegistry) -> list:
    # no_retry, like blind_retry, never sends a key, so every non-idempotent write goes key-less
    return [w for w in worlds(registry, LOST_ACK) if w.non_idempotent]


def test_every_lost_ack_becomes_a_duplicate_before_the_agent_sees_anything(registry: SpecRegistry
                                                                           ) -> None:
    ws = _lost_ack_on_keyless_non_idempotent_writes(registry)
    assert len(ws) >= 50
    for w, record in sweep(ws, "sdk_retry", NO_RETRY):
        assert record.fired
        assert record.duplicates >= 1, w
        focal_calls = agent_calls(record, w.tool)
        assert focal_calls and not any(e.is_error for e in focal_calls), w  # saw only success
        retries = harness_calls(record)
        assert retries and all(e.tool == w.tool for e in retries), w
        assert record.final_status == "completed" and record.overclaim


def test_without_the_retry_layer_the_same_agent_duplicates_nothing(registry: SpecRegistry) -> None:
    bad = [(w, r) for w, r in sweep(_lost_ack_on_keyless_non_idempotent_writes(registry), "vanilla",
                                    NO_RETRY) if r.duplicates]
    assert not bad, failures(bad)


def test_idempotent_writes_survive_transparent_retries(registry: SpecRegistry) -> None:
    ws = [w for w in worlds(registry, LOST_ACK) if not w.non_idempotent]
    assert ws
    bad = [(w, r) for w, r in sweep(ws, "sdk_retry", NO_RETRY) if not r.eos]
    assert not bad, failures(bad)


def test_sdk_retry_backs_off_1_2_4_seconds_and_gives_up_after_three_retries(registry: SpecRegistry
                                                                            ) -> None:
    record = run(world(registry, "cross_post", "post_x", "outage"), "sdk_retry", NO_RETRY)
    first = agent_calls(record, "x_publish")[0]  # the agent's own re-sends get retried too
    retries = [e for e in harness_calls(record) if e.t_end <= first.t_end]
    assert [e.tool for e in retries] == ["x_publish"] * 3
    assert first.is_error and first.response["error"]["status"] == 503  # the last answer
    gaps = [retries[0].t_start - (first.t_start + 1)]
    gaps += [b.t_start - a.t_end for a, b in itertools.pairwise(retries)]
    assert gaps == [1.0, 2.0, 4.0]
    assert first.t_end - first.t_start == 1 + (1 + 2 + 4) + 3 * 1  # backoff plus 3 calls
    refused = [e for e in agent_calls(record, "x_publish") if e.is_error]
    assert record.harness_seconds == (1 + 2 + 4 + 3) * len(refused)


@pytest.mark.parametrize("mode", ["http429", "http503", "timeout_pre", "http500_pre"])
def test_sdk_retry_hides_refusals_and_lost_requests(registry: SpecRegistry, mode: str) -> None:
    record = run(world(registry, "feature_flags", "publish", mode), "sdk_retry", NO_RETRY)
    assert record.eos
    assert not any(e.is_error for e in agent_calls(record, "linkedin_publish"))
    assert not agent_calls(record, "wait")  # the agent never had to wait anything out
    assert record.harness_calls == 1 and record.harness_seconds == 2.0


@pytest.mark.parametrize("mode", ["http429", "http503"])
def test_rules_retries_explicit_refusals_after_the_retry_hint(registry: SpecRegistry,
                                                              mode: str) -> None:
    record = run(world(registry, "feature_flags", "publish", mode), "rules", NO_RETRY)
    hint = 20 if mode == "http429" else 10
    assert record.eos and record.harness_calls == 1
    assert not any(e.is_error for e in agent_calls(record, "linkedin_publish"))
    assert record.harness_seconds == hint + 1


def test_rules_leaves_ambiguous_errors_alone(registry: SpecRegistry) -> None:
    ws = [w for w in worlds(registry, ("timeout_pre", *LOST_ACK, "timeout_late", "partial_batch"))]
    for w, record in sweep(ws, "rules", NO_RETRY):
        assert record.harness_calls == 0, w
        assert record.duplicates == 0, w


def test_retry_layers_do_not_touch_general_tools(registry: SpecRegistry) -> None:
    w = world(registry, "invoice_batch", "charge_1", "outage")
    for condition in ("sdk_retry", "rules"):
        record = run(w, condition, "scripted:blind_retry")
        assert all(e.tool not in ("wait", "escalate_to_human", "finish")
                   for e in harness_calls(record))
        assert record.eos


def test_explicit_faults_stay_exactly_once_under_both_retry_layers(registry: SpecRegistry) -> None:
    ws = worlds(registry, ("http429", "http503", "outage", "schema_drift"))
    for condition in ("sdk_retry", "rules"):
        bad = [(w, r) for w, r in sweep(ws, condition, NO_RETRY) if not r.eos]
        assert not bad, failures(bad)
