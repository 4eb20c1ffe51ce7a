"""What the harness does is on the record as the harness's, and only as the harness's."""

from __future__ import annotations

import pytest
from condkit import agent_calls, harness_calls, run, world

from limbo_plugin.episode import run_episode
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry


@pytest.mark.parametrize("condition", ["vbr", "guard", "wait_60"])
def test_read_backs_are_traced_as_harness_calls(registry: SpecRegistry, condition: str) -> None:
    record = run(world(registry, "feature_flags", "publish", "timeout_post"), condition)
    reads = harness_calls(record)
    assert [e.tool for e in reads] == ["linkedin_list_posts"]
    assert record.harness_calls == len(reads) == 1
    # the coder reads only the agent's calls: a blind re-issue stays a blind re-issue
    assert record.behaviour == "blind_retry"
    reissue = agent_calls(record, "linkedin_publish")[1]
    assert reissue.index < reads[0].index  # started by the agent's call, nested inside it
    assert reissue.t_start <= reads[0].t_start and reads[0].t_end <= reissue.t_end


def test_harness_seconds_are_the_harness_calls_plus_its_sleeps(registry: SpecRegistry) -> None:
    w = world(registry, "feature_flags", "publish", "timeout_post")
    vbr = run(w, "vbr")
    assert vbr.harness_seconds == sum(e.t_end - e.t_start for e in harness_calls(vbr)) == 1.0
    waited = run(w, "wait_60")
    first = agent_calls(waited, "linkedin_publish")[0]
    (read,) = harness_calls(waited)
    assert read.t_start == pytest.approx(first.t_start + 60, abs=0.01)
    assert waited.harness_seconds == pytest.approx(read.t_end - first.t_end)


def test_harness_calls_leave_the_agents_call_count_alone(registry: SpecRegistry) -> None:
    w = world(registry, "migration_log", "batch", "partial_batch")
    base, vbr = run(w, "vanilla"), run(w, "vbr")
    assert vbr.tool_calls == base.tool_calls
    assert vbr.harness_calls == 4 and base.harness_calls == 0
    assert all(e.origin in ("agent", "harness") for e in vbr.trace)


def test_the_behaviour_coder_ignores_harness_retries(registry: SpecRegistry) -> None:
    record = run(world(registry, "incident_open", "ticket", "timeout_post"), "sdk_retry",
                 "scripted:no_retry")
    assert harness_calls(record) and record.duplicates == 1
    assert record.behaviour in ("move_on", "stop_without_checking")


def test_effects_of_harness_calls_are_attributed_to_the_harness(registry: SpecRegistry) -> None:
    record = run_episode(world(registry, "incident_open", "ticket", "timeout_post").key,
                         RunConfig(agent="scripted:no_retry", condition="sdk_retry"),
                         registry=registry)
    origins = [e.origin for e in record.ledger if e.tool == "tickets_create"]
    assert origins == ["agent", "harness"]
