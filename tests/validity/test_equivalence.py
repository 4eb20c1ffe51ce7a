"""Observation-equivalent worlds give the agent byte-identical observations.

Within group T (timeout_pre/post/late/late_tail) and group E (http500_pre/post/partial_batch),
the agent's observations must not depend on the hidden outcome until it makes a call that can see
the effect: a read of the focal write's service, an escalation, or a keyed re-issue (a key replay
reveals the original). Up to that call every response is byte-identical, the clock agrees and the
agent makes the same calls; a history without such a call agrees to its end. Re-issues of
idempotent writes (a second refund, a repeated upsert or status change) are not exempt: their
answers do not depend on whether the first attempt took effect.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from limbo_plugin.contracts import ToolDefinition
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.records import EpisodeKey, EpisodeRecord, TraceEntry
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

GROUPS = {
    "T": ("timeout_pre", "timeout_post", "timeout_late", "timeout_late_tail"),
    "E": ("http500_pre", "http500_post", "partial_batch"),
}
POLICIES = ("blind_retry", "verify_first", "same_key", "escalate_first")


def observations(record: EpisodeRecord, registry: SpecRegistry) -> list[tuple[object, ...]]:
    """The agent's whole observable history up to the first call that can see the effect.

    Every agent call before it counts with its arguments, response and timing; the observing
    call itself counts with what the agent sent and when (its decision, made on identical
    observations), not with its answer. A trace without such a call counts in full, to the end:
    two worlds of a group must agree on everything the agent saw, including when it stopped.
    """
    catalog = registry.catalog(record.contract)
    focal = catalog.get(record.focal_tool or "")
    assert focal is not None
    reads = {t.name for t in catalog.tools.values() if t.service == focal.service
             and not t.is_write}
    seen: list[tuple[object, ...]] = []
    fault_seen = False
    for entry in record.trace:
        if entry.origin != "agent":
            continue
        if fault_seen and observes(entry, focal, reads):
            seen.append(("observing call", entry.tool, entry.arguments, entry.t_start))
            return seen
        fault_seen = fault_seen or (entry.tool == focal.name and entry.is_error)
        seen.append((entry.tool, entry.arguments, entry.response, entry.t_start, entry.t_end))
    seen.append(("episode ended", record.final_status, record.sim_seconds))
    return seen


def observes(entry: TraceEntry, focal: ToolDefinition, reads: set[str]) -> bool:
    """A read of the focal write's service, an escalation, or a keyed re-issue of the focal
    write (a key replay answers with the original)."""
    keyed = isinstance(entry.arguments, dict) and bool(
        focal.contract.key_param and entry.arguments.get(focal.contract.key_param))
    return (entry.tool in reads or entry.tool == "escalate_to_human"
            or (entry.tool == focal.name and keyed))


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_group_members_are_indistinguishable(registry: SpecRegistry, group: str,
                                             policy: str, contract: str) -> None:
    modes = GROUPS[group]
    keys = [k for k in iter_worlds(registry, sorted(registry.templates), [0], "all",
                                   [modes[0]])]
    assert keys
    checked = 0
    for base in keys:
        reference = None
        for mode in modes:
            key = EpisodeKey(**{**base.model_dump(), "fault_mode": mode})
            if mode == "partial_batch" and not registry.catalog().contract(
                    registry.template(key.template).instantiate(0).focal(
                        key.focal_write).tool).batch_field:
                continue
            record = run_episode(key, RunConfig(agent=f"scripted:{policy}", contract=contract),
                                 registry=registry)
            assert record.fired, key.id
            seen = observations(record, registry)
            if reference is None:
                reference = (mode, seen)
                continue
            assert seen == reference[1], (
                f"{key.id} differs from {reference[0]} before the effect is visible: "
                f"{first_difference(reference[1], seen)}")
            checked += 1
    assert checked >= len(keys)


def first_difference(expected: Sequence[tuple[object, ...]], got: Sequence[tuple[object, ...]]
                     ) -> str:
    for i, (a, b) in enumerate(zip(expected, got, strict=False)):
        if a != b:
            return f"observation {i}: {a!r} != {b!r}"
    return f"one history ends early ({len(expected)} vs {len(got)} observations)"


def test_the_comparison_fails_when_one_history_ends_early() -> None:
    """The check itself: a history that is a strict prefix of the other is a difference."""
    longer = [("tickets_create", {}, {"id": "OPS-1"}, 0.0, 30.0), ("episode ended", "completed")]
    assert longer[:1] != longer
    assert "ends early" in first_difference(longer, longer[:1])


def test_hidden_outcomes_really_differ(registry: SpecRegistry) -> None:
    """The pairs are not trivially equal: the ledgers of pre and post worlds differ."""
    base = dict(template="incident_open", instance=0, focal_write="ticket")
    pre = run_episode(EpisodeKey(**base, fault_mode="timeout_pre"),
                      RunConfig(agent="scripted:blind_retry"), registry=registry)
    post = run_episode(EpisodeKey(**base, fault_mode="timeout_post"),
                       RunConfig(agent="scripted:blind_retry"), registry=registry)
    assert len(post.ledger) == len(pre.ledger) + 1
    assert [e.response for e in pre.trace] == [e.response for e in post.trace][: len(pre.trace)]
