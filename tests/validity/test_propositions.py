"""The validity suite: scripted policies behave exactly as the propositions predict.

For every template, instances 0 and 1, every focal write and every applicable fault mode, each
reference policy's duplicate outcome must match :func:`predicted_duplicate`, the fault must fire,
the task must succeed (the truthful operator and the read-backs leave nothing undone), and
exactly-once success must be the absence of duplicates.

Every check reads its episodes from the session's shared sweep (``scripted_episode`` in
``conftest.py``): an episode several propositions look at is run once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from predictions import predicted_duplicate
from validitykit import ScriptedEpisode

from limbo_plugin.experiments import iter_worlds
from limbo_plugin.records import EpisodeKey
from limbo_plugin.spec.registry import SpecRegistry

POLICIES = ("blind_retry", "verify_first", "same_key", "escalate_first")
TASKS = Path(__file__).resolve().parents[2] / "specs" / "tasks"
TEMPLATES = tuple(sorted(p.stem for p in TASKS.glob("*.yaml")))
"""Every template file of the specs (a template added there is swept too)."""


def worlds(registry: SpecRegistry, template: str) -> list[EpisodeKey]:
    return list(iter_worlds(registry, [template], [0, 1], "all", list(registry.faults)))


def test_every_template_is_covered(registry: SpecRegistry) -> None:
    assert sorted(registry.templates) == sorted(TEMPLATES)


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("template", TEMPLATES)
def test_policy_outcomes_match_the_propositions(registry: SpecRegistry,
                                                scripted_episode: ScriptedEpisode,
                                                template: str, policy: str, contract: str
                                                ) -> None:
    catalog = registry.catalog(contract)
    mismatches = []
    keys = worlds(registry, template)
    assert keys, "no worlds expanded"
    for key in keys:
        record = scripted_episode(key, policy, contract)
        if key.fault_mode == "none":
            expected_dup, fired_expected = False, False
        else:
            focal = catalog.get(record.focal_tool or "")
            assert focal is not None
            expected_dup, fired_expected = predicted_duplicate(
                policy, registry.fault_mode(key.fault_mode), focal), True
        got_dup = record.duplicates > 0
        problems = []
        if got_dup != expected_dup:
            problems.append(f"duplicates={record.duplicates} (predicted "
                            f"{'some' if expected_dup else 'none'})")
        if record.fired != fired_expected:
            problems.append(f"fired={record.fired}")
        if not record.ts:
            problems.append("task not completed")
        if record.eos != (not got_dup):
            problems.append(f"eos={record.eos} with duplicates={record.duplicates}")
        if record.collateral or record.unrequested:
            problems.append(f"collateral={record.collateral} unrequested={record.unrequested}")
        if record.tool_calls > 40:
            problems.append(f"{record.tool_calls} tool calls")
        if problems:
            mismatches.append(f"{key.id}: {'; '.join(problems)}")
    assert not mismatches, "\n".join(mismatches)


def test_same_key_is_exactly_once_everywhere_under_keys_everywhere(
        registry: SpecRegistry, scripted_episode: ScriptedEpisode) -> None:
    """Proposition 2, stated directly: not one duplicate in any world of any template."""
    failures = [key.id for template in TEMPLATES for key in worlds(registry, template)
                if not scripted_episode(key, "same_key", "keys_everywhere").eos]
    assert failures == []


def test_verify_first_duplicates_under_late_commits_on_keyless_verifiable_writes(
        registry: SpecRegistry, scripted_episode: ScriptedEpisode) -> None:
    """Proposition 1: verification cannot see an in-flight request, in every such world."""
    catalog = registry.catalog()
    seen = 0
    for template in TEMPLATES:
        for key in worlds(registry, template):
            if key.fault_mode not in ("timeout_late", "timeout_late_tail"):
                continue
            task = registry.template(template).instantiate(key.instance)
            focal = catalog.get(task.focal(key.focal_write).tool)
            assert focal is not None
            if focal.accepts_key or focal.contract.idempotency != "non_idempotent" \
                    or focal.contract.read_back is None:
                continue
            record = scripted_episode(key, "verify_first")
            assert record.duplicates >= 1, key.id
            assert record.behaviour == "verify_then_retry", key.id
            assert record.overclaim, "the agent reports success it cannot know"
            seen += 1
    assert seen >= 40


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
@pytest.mark.parametrize("policy", ["blind_retry", "verify_first", "escalate_first"])
def test_only_same_key_sends_keys(registry: SpecRegistry, scripted_episode: ScriptedEpisode,
                                  policy: str, contract: str) -> None:
    """No policy but same_key attaches an idempotency key, whatever the contract accepts."""
    keyed = [
        (key.id, entry.tool)
        for template in TEMPLATES
        for key in worlds(registry, template)
        if key.fault_mode in ("timeout_post", "timeout_late")
        for entry in scripted_episode(key, policy, contract).trace
        if isinstance(entry.arguments, dict) and "idempotency_key" in entry.arguments
    ]
    assert keyed == []


def test_verify_first_duplicates_late_commits_of_keyable_writes(
        registry: SpecRegistry, scripted_episode: ScriptedEpisode) -> None:
    """Under the native contract verify_first and same_key part ways exactly on the natively
    keyable writes (billing charges, Mastodon posts): under late commits and redelivery the
    read-back policy duplicates and the key policy does not."""
    catalog = registry.catalog()
    seen = 0
    for template in TEMPLATES:
        for key in worlds(registry, template):
            if key.fault_mode not in ("timeout_late", "timeout_late_tail", "redelivery"):
                continue
            task = registry.template(template).instantiate(key.instance)
            focal = catalog.get(task.focal(key.focal_write).tool)
            assert focal is not None
            if not focal.accepts_key:
                continue
            verify = scripted_episode(key, "verify_first")
            same = scripted_episode(key, "same_key")
            assert verify.duplicates >= 1 and not verify.eos, key.id
            assert same.duplicates == 0 and same.eos, key.id
            seen += 1
    assert seen >= 10
