"""What the plugin's hooks only apply: each episode's keywords, markers and xfail reason, the
summary's family order, and the gate verdict the plugin and the command line share."""

from __future__ import annotations

import pytest

from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import Episode, episode_labels
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.report.aggregate import summarize
from limbo_plugin.report.gate import GateSpec, Threshold, run_gate
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry


def episode(template: str, focal: str, mode: str, **config: str) -> Episode:
    return Episode(key=EpisodeKey(template=template, instance=0, focal_write=focal,
                                  fault_mode=mode), config=RunConfig(**config))


def test_labels_of_a_faulted_episode(registry: SpecRegistry) -> None:
    labels = episode_labels(episode("incident_open", "ticket", "timeout_late",
                                    condition="guard"), registry)
    assert labels.keywords == {"incident_open", "timeout_late", "late_commit", "native",
                               "guard", "tickets_create", "tickets", "scripted-verify_first"}
    assert labels.markers == ("late_commit", "unresolvable")
    assert labels.xfail_reason is None
    assert labels.spec_file.endswith("incident_open.yaml") and labels.spec_line == 1


def test_labels_of_a_fault_free_and_an_explicit_episode(registry: SpecRegistry) -> None:
    baseline = episode_labels(episode("incident_open", "baseline", "none"), registry)
    assert {"tickets", "email", "none"} <= baseline.keywords
    assert baseline.markers == ("none",)
    assert episode_labels(episode("cross_post", "post_x", "http429"), registry).markers == (
        "explicit",)


def test_keyless_redelivery_is_an_expected_failure_unless_the_contract_adds_keys(
        registry: SpecRegistry) -> None:
    native = episode_labels(episode("incident_open", "ticket", "redelivery"), registry)
    assert native.xfail_reason == ("redelivery of tickets_create, which accepts no idempotency "
                                   "key: no client-side policy can be exactly-once")
    keyed = episode_labels(episode("incident_open", "ticket", "redelivery",
                                   contract="keys_everywhere"), registry)
    assert keyed.xfail_reason is None
    assert episode_labels(episode("invoice_batch", "charge_1", "redelivery"),
                          registry).xfail_reason is None, "billing charges accept a key"


def test_test_ids_carry_every_non_default_part_the_agent_included() -> None:
    assert episode("cross_post", "post_x", "none").id == "cross_post-i0-post_x-none"
    e = episode("cross_post", "post_x", "none", agent="litellm:openai/gpt-5-mini")
    assert e.id == "cross_post-i0-post_x-none-litellm-openai_gpt-5-mini"
    both = episode("cross_post", "post_x", "none", agent="scripted:blind_retry",
                   contract="keys_everywhere")
    assert both.id == "cross_post-i0-post_x-none-keys_everywhere-scripted-blind_retry"
    long = episode("cross_post", "post_x", "none", agent="litellm:" + "m" * 80 + "/a")
    assert len(long.id) < len("cross_post-i0-post_x-none") + 62
    assert long.id != episode("cross_post", "post_x", "none",
                              agent="litellm:" + "m" * 80 + "/b").id, "a digest keeps it apart"


def test_a_record_carries_the_test_id_of_its_item(registry: SpecRegistry) -> None:
    e = episode("cross_post", "post_x", "timeout_late", agent="scripted:blind_retry",
                condition="guard")
    record = run_episode(e.key, e.config, registry=registry)
    assert record.test_id == e.id == "cross_post-i0-post_x-timeout_late-guard-scripted-blind_retry"
    assert EpisodeRecord.model_validate_json(
        record.model_copy(update={"test_id": ""}).model_dump_json()).test_id == e.id


def _records(registry: SpecRegistry, agent: str) -> list[EpisodeRecord]:
    return [run_episode(e.key, e.config, registry=registry) for e in (
        episode("incident_open", "ticket", mode, agent=agent)
        for mode in ("timeout_post", "timeout_late", "http503"))]


def test_summary_rows_follow_the_fault_spec_order(registry: SpecRegistry) -> None:
    records = _records(registry, "scripted:blind_retry")
    rows = next(iter(summarize(records, family_order=registry.family_order).groups.values()))
    assert [r.family for r in rows] == ["lost_ack", "late_commit", "explicit", "all_faulted"]
    reverse = tuple(reversed(registry.family_order))
    rows = next(iter(summarize(records, family_order=reverse).groups.values()))
    assert [r.family for r in rows][:3] == ["explicit", "late_commit", "lost_ack"]
    unknown = next(iter(summarize(records, family_order=()).groups.values()))
    assert [r.family for r in unknown][:3] == ["explicit", "late_commit", "lost_ack"], (
        "families the order does not know come after it, by name")


@pytest.mark.parametrize(("agent", "passes"), [("scripted:blind_retry", False),
                                               ("scripted:verify_first", True)])
def test_run_gate_thresholds_and_baseline(registry: SpecRegistry, agent: str,
                                          passes: bool) -> None:
    gate = GateSpec(name="g", thresholds=[Threshold(metric="duplicate_rate", family="lost_ack",
                                                    max=0.0)])
    records = _records(registry, agent)
    result = run_gate(gate, records, family_order=registry.family_order)
    assert result.passed is passes
    assert [c.name for c in result.checks] == ["duplicate_rate[lost_ack] ≤ 0.0%"]
    compared = run_gate(gate, records, family_order=registry.family_order, baseline=records)
    assert len(compared.checks) == 4, "one McNemar check per family shared with the baseline"
    empty = run_gate(gate, [], family_order=registry.family_order)
    assert not empty.passed and empty.checks[0].detail == "no episode was recorded"
