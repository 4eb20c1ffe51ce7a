"""Condition names, declaration, construction, and what each condition may see (SPEC §6.2)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from condkit import run, world

from limbo_plugin.agents.prompts import SYSTEM_PROMPT
from limbo_plugin.conditions import (
    Condition,
    ConditionPattern,
    HarnessEnv,
    PromptChanges,
    all_conditions,
    annotate,
    condition_forms,
    find_condition,
    guard,
    intents,
    keys,
    retry,
    vbr,
    wait,
)
from limbo_plugin.conditions.prompts import AWARE_RULES, REFLECTION_MESSAGE
from limbo_plugin.episode import build_world
from limbo_plugin.errors import UsageError
from limbo_plugin.faults import FaultTransport
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolCall, ToolCaller

SPEC_NAMES = ("vanilla", "aware", "reflect", "sdk_retry", "rules", "vbr", "guard",
              "guard-no-key", "guard-no-consistency", "guard-no-block", "guard-no-annotate",
              "state_oracle", "outcome_oracle")
PROMPT_ONLY = ("vanilla", "aware", "reflect")
WORDING = ("paraphrase_1", "paraphrase_2", "paraphrase_3")
"""E4's system-prompt paraphrases (paper §5): prompt-only too, but not named by the SPEC."""
ORACLES = ("state_oracle", "outcome_oracle")
OWN = ("guard-no-promise",)
"""Conditions beyond the SPEC's list, each documented in its module and the README."""


def _env(registry: SpecRegistry, ground_truth: bool = False
         ) -> tuple[FaultTransport, HarnessEnv]:
    w = build_world(registry.template("cross_post").instantiate(0), registry)
    return FaultTransport(w), HarnessEnv(tools=dict(w.tools), world=w,
                                         ground_truth=w if ground_truth else None)


def test_every_condition_of_the_spec_is_declared() -> None:
    fixed = [c.name for c in all_conditions() if isinstance(c, Condition)]
    assert set(SPEC_NAMES + WORDING + OWN) <= set(fixed), "a condition of the spec is missing"
    assert len(fixed) == len(set(fixed))
    forms = [c.form for c in all_conditions() if isinstance(c, ConditionPattern)]
    assert "wait_<seconds>" in forms and len(forms) == len(set(forms)), \
        "the spec's pattern is declared once (a new pattern is welcome beside it)"
    for name in SPEC_NAMES:
        assert find_condition(name).name == name
    assert condition_forms()[:3] == list(PROMPT_ONLY), "prompt-only conditions are listed first"


@pytest.mark.parametrize("name", ["wait_0", "wait_60", "wait_90", "wait_3600", "wait_86400"])
def test_wait_accepts_any_whole_number_of_seconds(name: str) -> None:
    condition = find_condition(name)
    assert condition.name == name and condition.wraps is not None
    assert f"{name.removeprefix('wait_')} s" in condition.description


@pytest.mark.parametrize("name", ["", "wait_", "wait_-1", "wait_1.5", "wait_090", "wait90",
                                  "sdk-retry", "guard-no-keys", "guard-no-vbr", "oracle"])
def test_unknown_conditions_are_refused_with_the_valid_names(name: str) -> None:
    with pytest.raises(UsageError) as info:
        find_condition(name)
    message = str(info.value)
    assert repr(name) in message
    for valid in ("vanilla", "sdk_retry", "guard-no-annotate", "outcome_oracle", "wait_<"):
        assert valid in message


def test_only_the_oracles_read_ground_truth() -> None:
    readers = {c.name for c in all_conditions()
               if isinstance(c, Condition) and c.reads_ground_truth}
    assert readers == set(ORACLES)
    assert not find_condition("wait_90").reads_ground_truth


def test_prompt_changes_are_declared_by_the_conditions() -> None:
    assert find_condition("vanilla").prompt == PromptChanges()
    assert find_condition("aware").prompt.system_prompt(SYSTEM_PROMPT) == (
        SYSTEM_PROMPT + "\n\n" + AWARE_RULES)
    assert find_condition("reflect").prompt.after_tool_error == REFLECTION_MESSAGE
    assert all(find_condition(n).prompt == PromptChanges() for n in SPEC_NAMES
               if n not in PROMPT_ONLY), "middleware leaves the prompt alone"
    replaced = PromptChanges(system_replacement="Paraphrase.", system_addition="Rules.")
    assert replaced.system_prompt(SYSTEM_PROMPT) == "Paraphrase.\n\nRules."


@pytest.mark.parametrize("name", PROMPT_ONLY + WORDING)
def test_prompt_conditions_are_the_transport_itself(registry: SpecRegistry, name: str) -> None:
    transport, env = _env(registry)
    assert find_condition(name).build(transport, env) is transport


@pytest.mark.parametrize("name", [n for n in SPEC_NAMES if n not in PROMPT_ONLY] + ["wait_90"])
def test_middleware_wraps_the_transport_and_reports_its_time(registry: SpecRegistry,
                                                            name: str) -> None:
    condition = find_condition(name)
    transport, env = _env(registry, ground_truth=condition.reads_ground_truth)
    caller = condition.build(transport, env)
    assert caller is not transport
    assert isinstance(caller, ToolCaller)
    assert caller.harness_seconds == 0.0  # type: ignore[attr-defined]
    result = caller.call(ToolCall("mastodon_list_posts", {}))
    assert not result.is_error


@pytest.mark.parametrize("name", ORACLES)
def test_an_oracle_without_ground_truth_is_a_usage_error(registry: SpecRegistry, name: str
                                                         ) -> None:
    transport, env = _env(registry, ground_truth=False)
    with pytest.raises(UsageError, match="ground truth"):
        find_condition(name).build(transport, env)


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
    real = Condition.build

    def spy(self: Condition, transport: Any, env: HarnessEnv) -> Any:
        seen.append(env)
        return real(self, transport, env)

    monkeypatch.setattr(Condition, "build", spy)
    record = run(world(registry, "feature_flags", "publish", "timeout_post"), condition,
                 "scripted:verify_first")
    assert len(seen) == 1
    assert (seen[0].ground_truth is not None) == (condition in ORACLES)
    if condition != "sdk_retry":  # its transparent retry duplicates a lost ack by design
        assert record.eos, record.failure_message()


@pytest.mark.parametrize("name", ["aware", "reflect", *WORDING])
def test_prompt_conditions_change_nothing_for_a_scripted_agent(registry: SpecRegistry,
                                                               name: str) -> None:
    w = world(registry, "invoice_batch", "charge_1", "timeout_post")
    base, other = run(w, "vanilla"), run(w, name)
    assert other.ledger == base.ledger
    assert [e.model_dump() for e in other.trace] == [e.model_dump() for e in base.trace]
    assert other.harness_calls == other.harness_seconds == 0
