"""``vbr``: verify before an identical re-issue of an unknown-outcome write (SPEC §6.2).

With ``blind_retry`` underneath, vbr turns every lost acknowledgement on a strongly consistent
read path into exactly-once; what a read-back cannot see (an in-flight request, a lagging read
path, a write with no read-back) still duplicates.
"""

from __future__ import annotations

from condkit import LATE, LOST_ACK, agent_calls, failures, harness_calls, run, sweep, world
from condkit import worlds as all_worlds

from limbo_plugin.spec.registry import SpecRegistry


def test_exactly_once_after_lost_acks_on_strongly_consistent_read_paths(registry: SpecRegistry
                                                                        ) -> None:
    ws = [w for w in all_worlds(registry, LOST_ACK) if w.verification == "strong"]
    assert len(ws) >= 40
    bad = [(w, r) for w, r in sweep(ws, "vbr") if not r.eos]
    assert not bad, failures(bad)
    vanilla = [w for w, r in sweep(ws, "vanilla") if r.duplicates]
    assert len(vanilla) >= 30  # the same agent without vbr duplicates


def test_a_partial_batch_is_completed_with_only_the_missing_rows(registry: SpecRegistry) -> None:
    ws = all_worlds(registry, ("partial_batch",))
    assert ws
    for w, record in sweep(ws, "vbr"):
        assert record.eos, record.failure_message()
        reissue = agent_calls(record, w.tool)[-1]
        rows = len(reissue.arguments["rows"])
        assert len(reissue.response["ids"]) == reissue.response["inserted"] == rows
        assert len(harness_calls(record)) == rows  # one read-back per row


def test_late_commits_still_duplicate(registry: SpecRegistry) -> None:
    ws = [w for w in all_worlds(registry, LATE) if w.non_idempotent]
    for w, record in sweep(ws, "vbr"):
        assert record.duplicates >= 1, w
        if w.verification != "none":
            assert harness_calls(record), w  # it did verify; the request was in flight


def test_what_a_read_back_cannot_see_still_duplicates(registry: SpecRegistry) -> None:
    stale = [w for w in all_worlds(registry, LOST_ACK) if w.verification == "eventual"]
    blind = [w for w in all_worlds(registry, LOST_ACK) if w.verification == "none"]
    assert stale and blind
    for w, record in sweep([*stale, *blind], "vbr"):
        assert record.duplicates == 1, w


def test_vbr_is_invisible_to_the_agent(registry: SpecRegistry) -> None:
    record = run(world(registry, "feature_flags", "publish", "timeout_post"), "vbr")
    first, reissue = agent_calls(record, "linkedin_publish")
    assert first.is_error and "harness_note" not in first.response
    assert not reissue.is_error and "harness_note" not in reissue.response
    assert reissue.response["id"] == record.ledger[-1].record_ids[0]
    assert reissue.response["url"].endswith(reissue.response["id"])
    assert record.eos


def test_a_reissue_with_the_same_key_passes_unverified(registry: SpecRegistry) -> None:
    record = run(world(registry, "invoice_batch", "charge_1", "timeout_post"), "vbr",
                 "scripted:same_key")
    assert record.eos and not harness_calls(record)


def test_nothing_is_intercepted_without_an_ambiguous_error(registry: SpecRegistry) -> None:
    ws = all_worlds(registry, ("timeout_pre", "http500_pre", "redelivery", "http503",
                               "schema_drift"))
    for w, record in sweep(ws, "vbr"):
        if w.mode in ("timeout_pre", "http500_pre") and w.non_idempotent and (
                w.verification != "none"):
            assert harness_calls(record), w  # verified, found nothing, sent
        elif w.mode not in ("timeout_pre", "http500_pre"):
            assert not harness_calls(record), w
        if w.mode != "redelivery":  # vbr cannot help there: the agent saw success
            assert record.eos, w
