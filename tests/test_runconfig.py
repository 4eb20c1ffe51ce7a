"""The run configuration is validated once, where it comes in, by the registries that know the
valid values; the agent registry has one entry per kind of agent."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from limbo_plugin.agents import AGENT_KINDS, AgentOptions, check_agent, make_agent
from limbo_plugin.agents.scaffold import ScaffoldAgent
from limbo_plugin.agents.scripted import ScriptedAgent
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.experiments import load_experiment
from limbo_plugin.records import RUN_FIELDS
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry


@pytest.mark.parametrize(("field", "value", "listed"), [
    ("agent", "scripted:nope", "scripted:verify_first"),
    ("agent", "gpt:4", "scripted:<policy> (blind_retry,"),
    ("agent", "litellm:", "needs a model"),
    ("condition", "magic", "wait_<seconds>"),
    ("instruction", "loud", "default, no_cue"),
    ("operator", "silent", "truthful, unresponsive"),
    ("contract", "keyz", "keys_everywhere"),
    ("docs", "none", "no_consistency_docs"),
])
def test_a_bad_value_is_one_line_naming_the_valid_ones(registry: SpecRegistry, field: str,
                                                       value: str, listed: str) -> None:
    with pytest.raises(UsageError) as info:
        RunConfig.parse({field: value}, registry=registry)
    message = str(info.value)
    assert "\n" not in message and repr(value) in message and listed in message


def test_contract_and_docs_need_the_spec_registry_as_context() -> None:
    """Without specs (a broken tree) only the spec-independent fields are checked; the broken
    tree is then reported by collection, not as a confusing unknown-contract error."""
    assert RunConfig.parse({"contract": "custom", "docs": "custom"}).contract == "custom"
    with pytest.raises(UsageError, match="unknown condition"):
        RunConfig.parse({"condition": "magic"})


def test_constructing_a_bad_config_directly_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown operator variant"):
        RunConfig(operator="silent")
    assert RunConfig(agent="litellm:openai/gpt-5-mini", condition="wait_90").condition == "wait_90"


def test_records_and_configs_fingerprint_alike(registry: SpecRegistry) -> None:
    from limbo_plugin.episode import run_episode
    from limbo_plugin.records import EpisodeKey

    assert tuple(RunConfig.model_fields) == RUN_FIELDS
    config = RunConfig(agent="scripted:blind_retry", condition="guard", operator="unresponsive")
    key = EpisodeKey(template="incident_open", instance=0, focal_write="baseline",
                     fault_mode="none")
    assert run_episode(key, config, registry=registry).fingerprint() == config.fingerprint()


def test_experiment_values_are_checked_with_the_same_validators(tmp_path: Path,
                                                               registry: SpecRegistry) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nconditions: [vanilla, '@option',\n  magic]\n")
    with pytest.raises(SpecError) as info:
        load_experiment(spec, registry)
    error = info.value
    assert error.line == 3 and error.path == "conditions[2]"
    assert error.message.startswith("unknown condition 'magic'; valid: vanilla")
    spec.write_text("name: bad\ncontracts: [native, keyz]\n")
    with pytest.raises(SpecError, match="unknown contract 'keyz'"):
        load_experiment(spec, registry)


def test_one_agent_kind_per_prefix_each_checking_its_rest() -> None:
    prefixes = [kind.prefix for kind in AGENT_KINDS]
    assert {"scripted", "mcp", "litellm", "harness", "python"} <= set(prefixes)
    assert len(set(prefixes)) == len(prefixes)
    check_agent("scripted:same_key")
    check_agent("litellm:anthropic/claude")
    check_agent("mcp:verify_first")
    with pytest.raises(UsageError, match=r"valid forms: .*litellm:<model>"):
        check_agent("robot:arm")


def test_each_kind_builds_its_agent_with_the_validated_options() -> None:
    assert isinstance(make_agent("scripted:escalate_first"), ScriptedAgent)
    options = AgentOptions(cassette="unused", cassette_mode="replay", provider_retries=2)
    agent = make_agent("litellm:openai/gpt-5-mini", options)
    assert isinstance(agent, ScaffoldAgent) and agent.name == "litellm:openai/gpt-5-mini"
    assert agent.retries == 2 and agent.cassette is not None and agent.cassette.mode == "replay"


@pytest.mark.parametrize(("values", "problem"), [
    ({"cassette_mode": "bogus"}, "cassette_mode"),
    ({"provider_retries": 0}, "provider_retries"),
    ({"provider_backoff_s": -1}, "provider_backoff_s"),
    ({"temperature": 0}, "temperature"),
])
def test_agent_options_are_validated(values: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        AgentOptions(**values)
