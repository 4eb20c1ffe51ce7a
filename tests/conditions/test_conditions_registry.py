"""Condition names, validation, construction, and what each condition may see (SPEC §6.2)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from condkit import run, world

import limbo_plugin.episode as episode_module
from limbo_plugin.conditions import (
    HarnessEnv,
    annotate,
    build_condition,
    guard,
    intents,
    keys,
    retry,
    validate_condition,
    vbr,
    wait,
)
from limbo_plugin.conditions.registry import (
    CONDITION_NAMES,
    ORACLE_CONDITIONS,
    PROMPT_CONDITIONS,
    needs_ground_truth,
)
from limbo_plugin.episode import build_world
from limbo_plugin.errors import UsageError
from limbo_plugin.faults import FaultTransport
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolCall, ToolCaller

SPEC_NAMES = ("vanilla", "aware", "reflect", "sdk_retry", "rules", "vbr", "guard",
              "guard-no-key", "guard-no-consistency", "guard-no-block", "guard-no-annotate",
              "state_oracle", "outcome_oracle")


def _env(registry: SpecRegistry, ground_truth: bool = False
         ) -> tuple[FaultTransport, HarnessEnv]:
    w = build_world(registry.template("cross_post").instantiate(0), registry)
    return FaultTransport(w), HarnessEnv(tools=dict(w.tools), world=w,
                                         ground_truth=w if ground_truth else None)


def test_every_condition_of_the_spec_is_registered() -> None:
    assert set(SPEC_NAMES) == set(CONDITION_NAMES)
    for name in SPEC_NAMES:
        validate_condition(name)


@pytest.mark.parametrize("name", ["wait_0", "wait_60", "wait_90", "wait_3600", "wait_86400"])
def test_wait_accepts_any_whole_number_of_seconds(name: str) -> None:
    validate_condition(name)


@pytest.mark.parametrize("name", ["", "wait_", "wait_-1", "wait_1.5", "wait_090", "wait90",
                                  "sdk-retry", "guard-no-keys", "guard-no-vbr", "oracle"])
def test_unknown_conditions_are_refused_with_the_valid_names(name: str) -> None:
    with pytest.raises(UsageError) as info:
        validate_condition(name)
    message = str(info.value)
    assert repr(name) in message
    for valid in ("vanilla", "sdk_retry", "guard-no-annotate", "outcome_oracle", "wait_<"):
        assert valid in message


def test_only_the_oracles_need_ground_truth() -> None:
    assert {n for n in CONDITION_NAMES if needs_ground_truth(n)} == set(ORACLE_CONDITIONS)
    assert not needs_ground_truth("wait_90")


@pytest.mark.parametrize("name", PROMPT_CONDITIONS)
def test_prompt_conditions_are_the_transport_itself(registry: SpecRegistry, name: str) -> None:
    transport, env = _env(registry)
    assert build_condition(name, transport, env) is transport


@pytest.mark.parametrize("name", [n for n in SPEC_NAMES if n not in PROMPT_CONDITIONS]
                         + ["wait_90"])
def test_middleware_wraps_the_transport_and_reports_its_time(registry: SpecRegistry,
                                                            name: str) -> None:
    transport, env = _env(registry, ground_truth=needs_ground_truth(name))
    caller = build_condition(name, transport, env)
    assert caller is not transport
    assert isinstance(caller, ToolCaller)
    assert caller.harness_seconds == 0.0  # type: ignore[attr-defined]
    result = caller.call(ToolCall("mastodon_list_posts", {}))
    assert not result.is_error


@pytest.mark.parametrize("name", ORACLE_CONDITIONS)
def test_an_oracle_without_ground_truth_is_a_usage_error(registry: SpecRegistry, name: str) -> None:
    transport, env = _env(registry, ground_truth=False)
    with pytest.raises(UsageError, match="ground truth"):
        build_condition(name, transport, env)


def test_the_harness_env_keeps_the_clock_but_not_the_world(registry: SpecRegistry) -> None:
    _transport, env = _env(registry)
    assert not hasattr(env, "world")
    assert env.ground_truth is None
    start = env.now
    env.sleep(5)
    env.sleep_until(start + 3)  # already past: no-op
    assert env.now == start + 5


def test_middleware_modules_never_mention_ground_truth() -> None:
    """Only the oracles (and the registry that hands it to them) may touch ``ground_truth``."""
    for module in (annotate, guard, intents, keys, retry, vbr, wait):
        assert "ground_truth" not in inspect.getsource(module), module.__name__


@pytest.mark.parametrize("condition", [*SPEC_NAMES, "wait_120"])
def test_episodes_hand_ground_truth_to_the_oracles_only(registry: SpecRegistry, condition: str,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    seen: list[HarnessEnv] = []
    real = episode_module.build_condition

    def spy(name: str, transport: Any, env: HarnessEnv) -> Any:
        seen.append(env)
        return real(name, transport, env)

    monkeypatch.setattr(episode_module, "build_condition", spy)
    record = run(world(registry, "feature_flags", "publish", "timeout_post"), condition,
                 "scripted:verify_first")
    assert len(seen) == 1
    assert (seen[0].ground_truth is not None) == (condition in ORACLE_CONDITIONS)
    if condition != "sdk_retry":  # its transparent retry duplicates a lost ack by design
        assert record.eos, record.failure_message()


@pytest.mark.parametrize("name", ["aware", "reflect"])
def test_prompt_conditions_change_nothing_for_a_scripted_agent(registry: SpecRegistry,
                                                               name: str) -> None:
    w = world(registry, "invoice_batch", "charge_1", "timeout_post")
    base, other = run(w, "vanilla"), run(w, name)
    assert other.ledger == base.ledger
    assert [e.model_dump() for e in other.trace] == [e.model_dump() for e in base.trace]
    assert other.harness_calls == other.harness_seconds == 0
