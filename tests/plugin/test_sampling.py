"""``--limbo-sample N``: a pilot of N worlds of what ``-k``/``-m`` selected, stratified over
fault families and templates, the same on every run for one seed."""

from __future__ import annotations

import pytest

from limbo_plugin.experiments import find_experiment, load_experiment
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.sampling import Sample, sample_worlds
from limbo_plugin.spec.registry import SpecRegistry


def default_worlds(registry: SpecRegistry) -> list:
    experiment = load_experiment(find_experiment("default", registry), registry)
    return [e.key for e in experiment.episodes(registry, {}, RunConfig())]


def family(registry: SpecRegistry, mode: str) -> str:
    return "none" if mode == "none" else registry.fault_mode(mode).family


def test_a_sample_covers_every_family_before_any_twice(registry: SpecRegistry) -> None:
    keys = default_worlds(registry)
    families = {family(registry, k.fault_mode) for k in keys}
    picked = sample_worlds(keys, Sample(len(families)), registry)
    assert len(picked) == len(families)
    assert {family(registry, k.fault_mode) for k in picked} == families
    bigger = sample_worlds(keys, Sample(3 * len(families)), registry)
    assert picked <= bigger, "a larger sample extends a smaller one"
    per_family = [sum(family(registry, k.fault_mode) == f for k in bigger) for f in families]
    assert min(per_family) >= 2, "stratified: no family left behind"


def test_within_a_family_the_templates_differ_and_the_seed_changes_the_sample(
        registry: SpecRegistry) -> None:
    late = [k for k in default_worlds(registry) if family(registry, k.fault_mode) == "late_commit"]
    templates = {k.template for k in late}
    picked = sample_worlds(late, Sample(len(templates)), registry)
    assert {k.template for k in picked} == templates
    assert sample_worlds(late, Sample(5, seed=1), registry) != sample_worlds(
        late, Sample(5, seed=2), registry)
    assert sample_worlds(late, Sample(5, seed=1), registry) == sample_worlds(
        list(reversed(late)), Sample(5, seed=1), registry), "order-independent"


def collected(project: pytest.Pytester, *args: str) -> list[str]:
    result = project.runpytest("--collect-only", "-q", "--experiment", "default", *args)
    return [line for line in result.stdout.lines if "::" in line]


def test_the_plugin_samples_after_k_and_the_same_way_every_time(project: pytest.Pytester
                                                                ) -> None:
    first = collected(project, "-k", "late_commit or lost_ack", "--limbo-sample", "6")
    assert len(first) == 6 and first == collected(
        project, "-k", "late_commit or lost_ack", "--limbo-sample", "6")
    assert collected(project, "-k", "late_commit or lost_ack", "--limbo-sample", "6:1") != first
    everything = collected(project, "-k", "late_commit or lost_ack")
    assert set(first) < set(everything)


def test_a_bad_sample_is_one_line(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "small", "--limbo-sample", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--limbo-sample '0': expected N or N:SEED with N ≥ 1" in result.stderr.str()
