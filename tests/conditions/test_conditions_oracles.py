"""The reference oracles: the guard verifying against ground truth (SPEC §6.2, paper §6.5)."""

from __future__ import annotations

import pytest
from condkit import LATE, LOST_ACK, failures, focal_calls, harness_calls, run, sweep
from condkit import world as one_world
from condkit import worlds as all_worlds

from limbo_plugin.spec.registry import SpecRegistry


@pytest.mark.parametrize("agent", ["scripted:blind_retry", "scripted:verify_first"])
def test_outcome_oracle_is_exactly_once_except_keyless_redelivery(registry: SpecRegistry,
                                                                  agent: str) -> None:
    bad, expected = [], 0
    for w, record in sweep(all_worlds(registry), "outcome_oracle", agent):
        keyless_redelivery = (registry.fault_mode(w.mode).exactly_once_needs_key
                              and w.non_idempotent and w.definition.contract.key_param is None)
        assert (record.expected_failure is not None) == keyless_redelivery, w
        expected += keyless_redelivery
        if record.eos == keyless_redelivery:
            bad.append((w, record))
    assert not bad, failures(bad)
    assert expected >= 20


def test_outcome_oracle_waits_exactly_until_the_in_flight_request_commits(registry: SpecRegistry
                                                                          ) -> None:
    for w, record in sweep([w for w in all_worlds(registry, LATE) if w.non_idempotent
                            and w.definition.contract.key_param is None], "outcome_oracle"):
        assert record.eos, w
        first, reissue = focal_calls(record, w.tool)
        delay = record.fault.delay_s
        assert delay is not None, w
        assert reissue.t_end == pytest.approx(first.t_start + delay)
        assert record.harness_seconds == pytest.approx(delay - 30)
        assert "harness_note" in reissue.response and not harness_calls(record)


def test_state_oracle_duplicates_under_late_commits(registry: SpecRegistry) -> None:
    ws = [w for w in all_worlds(registry, LATE) if w.non_idempotent
          and w.definition.contract.key_param is None]
    assert len(ws) >= 50
    for w, record in sweep(ws, "state_oracle"):
        assert record.duplicates == 1 or (record.duplicates == 4 and w.tool == "db_insert_rows"), w


def test_state_oracle_resolves_every_committed_fault_a_read_back_could_not(registry: SpecRegistry
                                                                           ) -> None:
    ws = all_worlds(registry, (*LOST_ACK, "partial_batch", "timeout_pre", "http500_pre"))
    assert {w.verification for w in ws} == {"strong", "eventual", "none"}
    bad = [(w, r) for w, r in sweep(ws, "state_oracle") if not r.eos]
    assert not bad, failures(bad)
    guard = [w for w, r in sweep(ws, "guard") if not r.eos]
    assert guard  # the guard cannot do as well: blocked unverifiable writes never complete


def test_oracles_make_no_calls_of_their_own(registry: SpecRegistry) -> None:
    record = run(one_world(registry, "hotfix_long", "publish_weibo", "timeout_post"),
                 "state_oracle")
    assert record.eos and record.harness_calls == 0 and record.harness_seconds == 0
