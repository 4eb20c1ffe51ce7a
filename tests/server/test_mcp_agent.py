"""``mcp:<policy>`` is the scripted policy with only the route of its calls changed: over real
stdio MCP to ``limbo mcp``, over HTTP to the sandbox service, into the episode. So it must reach
exactly the in-process policy's record — outcome, trace, ledger — in worlds of every fault family,
under both contracts and with the guard's middleware in the service."""

from __future__ import annotations

import json

import pytest

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

FAMILY_SAMPLE = [
    ("incident_open", "ticket", "timeout_pre"),          # not_executed
    ("incident_open", "ticket", "timeout_post"),         # lost_ack
    ("invoice_batch", "charge_1", "http500_post"),       # misleading_500 (keyable)
    ("migration_log", "batch", "partial_batch"),         # partial_batch
    ("release_announcement", "email", "timeout_late"),   # late_commit (eventual read-back)
    ("cross_post", "post_x", "redelivery"),              # redelivery (no read-back)
    ("deploy_release", "deploy_production", "outage"),   # explicit
    ("feature_flags", "baseline", "none"),               # none
]
POLICIES = ["verify_first", "blind_retry", "same_key", "escalate_first"]


def _key(template: str, focal: str, mode: str) -> EpisodeKey:
    return EpisodeKey(template=template, instance=0, focal_write=focal, fault_mode=mode)


def _same(key: EpisodeKey, policy: str, registry: SpecRegistry, **config: str
          ) -> tuple[EpisodeRecord, EpisodeRecord]:
    local = run_episode(key, RunConfig(agent=f"scripted:{policy}", **config), registry=registry)
    remote = run_episode(key, RunConfig(agent=f"mcp:{policy}", **config), registry=registry)
    assert remote.error is None, remote.error
    assert remote.agent == f"mcp:{policy}"
    mine = remote.model_dump(exclude={"agent", "test_id"})
    theirs = local.model_dump(exclude={"agent", "test_id"})
    assert json.dumps(mine, sort_keys=True) == json.dumps(theirs, sort_keys=True), key.id
    return local, remote


@pytest.mark.slow
def test_every_family_under_the_native_contract(registry: SpecRegistry) -> None:
    outcomes = set()
    for index, world in enumerate(FAMILY_SAMPLE):
        local, _ = _same(_key(*world), POLICIES[index % len(POLICIES)], registry)
        outcomes.add((local.duplicates, local.eos, local.behaviour))
    assert len(outcomes) >= 4  # the sample's outcomes differ: equality is not trivial


@pytest.mark.parametrize("config", [{"contract": "keys_everywhere"}, {"condition": "guard"}],
                         ids=["keys_everywhere", "guard"])
def test_the_contract_and_the_middleware_apply_over_mcp(config: dict[str, str],
                                                        registry: SpecRegistry) -> None:
    harness_calls = 0
    for world in FAMILY_SAMPLE[1::2]:
        _, remote = _same(_key(*world), "blind_retry", registry, **config)
        harness_calls += remote.harness_calls
    if config.get("condition") == "guard":
        assert harness_calls > 0  # the guard verified on the agent's behalf, inside the service


def test_blind_retry_duplicates_a_lost_ack_over_mcp_and_verify_first_does_not(
        registry: SpecRegistry) -> None:
    key = _key("incident_open", "ticket", "timeout_post")
    blind = run_episode(key, RunConfig(agent="mcp:blind_retry"), registry=registry)
    verify = run_episode(key, RunConfig(agent="mcp:verify_first"), registry=registry)
    assert blind.duplicates == 1 and not blind.eos
    assert verify.duplicates == 0 and verify.eos


def test_unknown_policy_names_the_valid_ones() -> None:
    from limbo_plugin.agents import check_agent
    from limbo_plugin.errors import UsageError

    with pytest.raises(UsageError, match=r"mcp policies: mcp:blind_retry, mcp:verify_first"):
        check_agent("mcp:verify_everything")


def test_an_mcp_server_that_will_not_start_is_an_infrastructure_error(
        monkeypatch: pytest.MonkeyPatch, registry: SpecRegistry) -> None:
    import limbo_plugin.agents.mcp_agent as mcp_agent
    from limbo_plugin.server.launch import McpLaunch

    def broken(url: str, token: str) -> McpLaunch:
        return McpLaunch(command="python3", args=("-c", "import sys; sys.exit('no mcp here')"),
                         env={})

    monkeypatch.setattr(mcp_agent, "episode_launch", broken)
    record = run_episode(_key("incident_open", "ticket", "timeout_post"),
                         RunConfig(agent="mcp:verify_first"), registry=registry)
    assert record.error is not None and record.error.startswith("infrastructure error: ")
    assert "the MCP path failed" in record.error and "no mcp here" in record.error
    assert record.tool_calls == 0
