"""The study's experiment specs (``specs/experiments/e1.yaml`` … ``e6.yaml``, ``e2k``, ``e3k``)
implement paper §5's designs, and the documentation states their sizes.

Expected sizes are computed here from the paper's description and the templates' focal writes
alone (counted directly from the task specs, not through the expansion code), so a spec that
drops a mode, an instance, an arm or a model — or an expansion that loses or repeats episodes —
fails. The same formulas, evaluated on the paper's own worlds (34 focal writes on instance 0),
give the paper's totals: that is how the designs the paper leaves implicit were read.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from limbo_plugin.experiments import Episode, load_experiment
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

ROOT = Path(__file__).resolve().parents[2]
STUDY = ("e1", "e2", "e2k", "e3", "e3k", "e4", "e5", "e6")
E1_EXCLUDED = ("timeout_late_tail",)
"""E1 runs every fault mode of the specs but these (and so grows with a new mode)."""

GATEWAY = "litellm:openai/"
E1_MODELS = ("gpt-6-astra", "gpt-6-sol", "gpt-5.6-sol", "gpt-5.4-mini", "gpt-4.1",
             "claude-opus-5.5", "gemini-3.8-flash", "grok-4.7", "mai-code-1.1-flash")
E2_MODELS = ("claude-opus-5.5", "gpt-6-sol", "gemini-3.8-flash", "mai-code-1.1-flash")
E2_CONDITIONS = ("vanilla", "aware", "reflect", "sdk_retry", "rules", "vbr", "guard",
                 "state_oracle", "outcome_oracle")
AMBIGUOUS = ("timeout_pre", "timeout_post", "timeout_late", "http500_pre", "http500_post",
             "partial_batch", "redelivery")
CORE = ("timeout_pre", "timeout_post", "http500_post", "partial_batch", "timeout_late",
        "redelivery")
"""One mode per ambiguous fault family (E3, E3k, and E6 with the fault-free episode)."""


def scaffold(*models: str) -> set[str]:
    return {GATEWAY + m for m in models}


@dataclass(frozen=True)
class Worlds:
    """Focal-write counts of the templates on one instance: all of them, each template's first
    two, and how many of those are batch writes (the only ones partial_batch applies to)."""

    focal: int
    batch: int
    first_two: int
    batch_in_first_two: int
    templates: int


@dataclass(frozen=True)
class Modes:
    """E1's fault modes (all but :data:`E1_EXCLUDED` and ``none``): how many apply to every
    focal write, and how many to batch writes only."""

    every_write: int
    batch_only: int


def worlds_of(registry: SpecRegistry, instance: int) -> Worlds:
    focal = batch = first_two = batch_first_two = 0
    for name in registry.templates:
        writes = registry.template(name).instantiate(instance).focal_writes
        is_batch = [bool(registry.catalog().contract(f.tool).batch_field) for f in writes]
        focal += len(writes)
        batch += sum(is_batch)
        first_two += min(2, len(writes))
        batch_first_two += sum(is_batch[:2])
    return Worlds(focal, batch, first_two, batch_first_two, len(registry.templates))


def e1_modes(registry: SpecRegistry) -> Modes:
    modes = [registry.fault_mode(m) for m in registry.faults
             if m != "none" and m not in E1_EXCLUDED]
    batch_only = sum(bool(m.batch_only) for m in modes)
    return Modes(every_write=len(modes) - batch_only, batch_only=batch_only)


def sizes(i0: Worlds, i1: Worlds, modes: Modes) -> dict[str, dict[str, int]]:
    """Episodes per agent (or per agent group) of each experiment, from paper §5."""
    every, batch_only = modes.every_write, modes.batch_only
    e1 = sum(every * i.focal + batch_only * i.batch + i.templates for i in (i0, i1))
    # supplement: instances 2-7, the batch insert and x_publish, each with its fault-free one
    e1 += 6 * ((every + batch_only + 1) + (every + 1))
    e2_worlds = 6 * i0.focal + i0.batch + i0.templates  # 7 ambiguous modes, the fault-free one
    e3_worlds = 5 * i0.first_two + i0.batch_in_first_two
    e4_worlds = 2 * i0.first_two
    return {
        "e1": {"model": e1},
        "e2": {"model": 9 * e2_worlds},
        "e2k": {"model": 2 * e2_worlds},
        "e3": {"agent": 2 * e3_worlds},
        "e3k": {"agent": 2 * e3_worlds},
        "e4": {"model": (2 + 3 + 2) * e4_worlds, "ablation model": (2 + 3 + 2 + 4) * e4_worlds},
        "e5": {"model": (4 + 5 + 3 + 2) * i0.focal},
        "e6": {"model": 5 * i0.focal + i0.batch + i0.templates},
    }


AGENTS = {"e1": 9, "e2": 4, "e2k": 4, "e3": 12, "e3k": 4, "e4": 4, "e5": 4, "e6": 6}


def totals(per: dict[str, dict[str, int]]) -> dict[str, int]:
    out = {name: AGENTS[name] * next(iter(group.values())) for name, group in per.items()}
    out["e4"] = 2 * per["e4"]["model"] + 2 * per["e4"]["ablation model"]
    return out


def episodes(registry: SpecRegistry, name: str, **overrides: str) -> list[Episode]:
    experiment = load_experiment(ROOT / "specs" / "experiments" / f"{name}.yaml", registry)
    return experiment.episodes(registry, overrides, RunConfig())


@pytest.fixture(scope="module")
def study(registry: SpecRegistry) -> dict[str, list[Episode]]:
    return {name: episodes(registry, name) for name in STUDY}


@pytest.fixture(scope="module")
def expected(registry: SpecRegistry) -> dict[str, dict[str, int]]:
    return sizes(worlds_of(registry, 0), worlds_of(registry, 1), e1_modes(registry))


def per_agent(found: list[Episode]) -> Counter[str]:
    return Counter(e.config.agent for e in found)


def test_the_formulas_give_the_papers_totals_on_its_worlds() -> None:
    """The paper's instance 0 had 34 focal writes (ours 35: invoice_batch bills three
    customers there); on its worlds the designs read from §5 give its stated totals."""
    paper = Worlds(focal=34, batch=1, first_two=24, batch_in_first_two=1, templates=12)
    modes = Modes(every_write=10, batch_only=1)  # the paper's eleven modes
    per, total = sizes(paper, paper, modes), totals(sizes(paper, paper, modes))
    assert per["e1"]["model"] == 844 and 8 * 844 + 732 == 7484  # gpt-4.1: 732/844 = 87 %
    assert total["e2"] + total["e2k"] == 9548
    assert total["e5"] == 1904
    assert total["e6"] == 1098


@pytest.mark.parametrize("name", STUDY)
def test_each_experiment_has_its_papers_size_per_agent(study: dict[str, list[Episode]],
                                                      expected: dict[str, dict[str, int]],
                                                      name: str) -> None:
    counts = per_agent(study[name])
    assert len(counts) == AGENTS[name]
    assert sorted(set(counts.values())) == sorted(set(expected[name].values()))
    assert len(study[name]) == totals(expected)[name]
    assert len(set(study[name])) == len(study[name])


def test_e1_is_nine_models_every_mode_but_the_tail_and_the_supplement(
        registry: SpecRegistry, study: dict[str, list[Episode]]) -> None:
    found = study["e1"]
    assert {e.config.agent for e in found} == scaffold(*E1_MODELS)
    assert {(e.config.contract, e.config.condition, e.config.docs, e.config.instruction,
             e.config.operator) for e in found} == {
        ("native", "vanilla", "default", "default", "truthful")}
    modes = {e.key.fault_mode for e in found}
    assert modes == set(registry.faults) - set(E1_EXCLUDED)
    supplement = {(e.key.template, e.key.focal_write) for e in found if e.key.instance >= 2}
    assert supplement == {("migration_log", "batch"), ("cross_post", "post_x"),
                          ("migration_log", "baseline"), ("cross_post", "baseline")}
    assert {e.key.instance for e in found} == set(range(8))


def test_e2_and_e2k_cross_the_conditions_on_the_same_worlds(study: dict[str, list[Episode]]
                                                            ) -> None:
    e2, e2k = study["e2"], study["e2k"]
    assert {e.config.agent for e in e2} == {e.config.agent for e in e2k} == scaffold(
        *E2_MODELS)
    assert {e.config.condition for e in e2} == set(E2_CONDITIONS)
    assert {(e.config.contract, e.config.condition) for e in e2k} == {
        ("keys_everywhere", "vanilla"), ("keys_everywhere", "guard")}
    assert {e.config.contract for e in e2} == {"native"}
    assert {e.key for e in e2} == {e.key for e in e2k}
    assert {e.key.fault_mode for e in e2} == {*AMBIGUOUS, "none"}
    assert {e.key.instance for e in e2} == {0}


def test_e3_gives_each_harness_its_models_and_the_scaffold_all_of_them(
        registry: SpecRegistry, study: dict[str, list[Episode]]) -> None:
    agents = {e.config.agent for e in study["e3"]}
    by_harness: dict[str, set[str]] = {}
    for agent in agents:
        kind, _, rest = agent.partition(":")
        harness, model = rest.split(":") if kind == "harness" else ("scaffold", rest)
        by_harness.setdefault(harness, set()).add(model.removeprefix("openai/"))
    assert by_harness == {
        "copilot": {"claude-opus-5.5", "gpt-5.6-sol", "gemini-3.8-flash"},
        "hermes": {"claude-opus-5.5", "gpt-5.6-sol", "gemini-3.8-flash"},
        "codex": {"gpt-5.6-sol", "gpt-6-sol"},
        "scaffold": {"claude-opus-5.5", "gpt-5.6-sol", "gemini-3.8-flash", "gpt-6-sol"}}
    assert {e.config.condition for e in study["e3"]} == {"vanilla", "guard"}
    assert {e.key.fault_mode for e in study["e3"]} == set(CORE)
    per_template = Counter(e.key.template for e in study["e3"] if e.key.fault_mode
                           == "timeout_post" and e.config.agent == GATEWAY + "gpt-6-sol"
                           and e.config.condition == "vanilla")
    assert per_template == {name: min(2, len(template.instantiate(0).focal_writes))
                            for name, template in registry.templates.items()}
    e3k = study["e3k"]
    assert {e.config.agent for e in e3k} == {
        GATEWAY + "gpt-5.6-sol", "harness:copilot:gpt-5.6-sol", "harness:hermes:gpt-5.6-sol",
        "harness:codex:gpt-5.6-sol"}
    assert {e.config.contract for e in e3k} == {"keys_everywhere"}
    assert {e.key for e in e3k} == {e.key for e in study["e3"]}


def test_e4_arms_match_e2_episodes_and_ablate_on_two_models(study: dict[str, list[Episode]]
                                                            ) -> None:
    e4, e2 = study["e4"], study["e2"]
    assert {e.key for e in e4} <= {e.key for e in e2}, "every E4 world has E2 counterparts"
    probes = Counter((e.config.docs, e.config.condition, e.config.operator) for e in e4)
    assert set(probes) == {
        ("no_consistency_docs", "vanilla", "truthful"), ("explicit", "vanilla", "truthful"),
        ("default", "paraphrase_1", "truthful"), ("default", "paraphrase_2", "truthful"),
        ("default", "paraphrase_3", "truthful"),
        ("default", "vanilla", "unresponsive"), ("default", "guard", "unresponsive"),
        ("default", "guard-no-key", "truthful"), ("default", "guard-no-consistency", "truthful"),
        ("default", "guard-no-block", "truthful"), ("default", "guard-no-annotate", "truthful")}
    ablated = {e.config.agent for e in e4 if e.config.condition.startswith("guard-no-")}
    assert ablated == scaffold("gemini-3.8-flash", "mai-code-1.1-flash")
    assert {e.key.fault_mode for e in e4} == {"timeout_post", "timeout_late"}


def test_e5_crosses_each_delay_with_its_own_grid(study: dict[str, list[Episode]]) -> None:
    found = study["e5"]
    grid: dict[str, set[tuple[str, str]]] = {}
    for e in found:
        grid.setdefault(e.key.fault_mode, set()).add((e.config.contract, e.config.condition))
    assert grid == {
        "timeout_late": {("native", f"wait_{d}") for d in (0, 60, 120, 300)},
        "timeout_late_tail": {("native", f"wait_{d}") for d in (0, 60, 300, 900, 3600)}
        | {("native", "vanilla"), ("native", "guard"), ("native", "outcome_oracle"),
           ("keys_everywhere", "vanilla"), ("keys_everywhere", "guard")}}
    assert {e.config.agent for e in found} == scaffold(*E2_MODELS)
    assert {e.key.instance for e in found} == {0}


def test_e6_pairs_with_e1(study: dict[str, list[Episode]]) -> None:
    e6, e1 = study["e6"], study["e1"]
    assert {e.config.instruction for e in e6} == {"no_cue"}
    assert len({e.config.agent for e in e6}) == 6
    counterparts = {(e.key, e.config.model_copy(update={"instruction": "default"}))
                    for e in e6}
    assert counterparts <= {(e.key, e.config) for e in e1}
    assert {e.key.fault_mode for e in e6} == {*CORE, "none"}


@pytest.mark.parametrize("agent", ["scripted:same_key", "mcp:verify_first",
                                   "litellm:anthropic/claude-x", "harness:codex:gpt-x",
                                   "python:my_agents:Agent"])
def test_an_agent_override_runs_each_design_for_that_agent_alone(
        registry: SpecRegistry, study: dict[str, list[Episode]],
        expected: dict[str, dict[str, int]], agent: str) -> None:
    for name in STUDY:
        found = episodes(registry, name, agent=agent)
        assert {e.config.agent for e in found} == {agent}
        # the agent runs the design's largest share: every configuration of every arm
        assert len(found) == max(expected[name].values())
        assert {(e.key, e.config.model_copy(update={"agent": "x"})) for e in found} == {
            (e.key, e.config.model_copy(update={"agent": "x"})) for e in study[name]}


def test_the_docs_state_each_experiments_size(expected: dict[str, dict[str, int]]) -> None:
    section = (ROOT / "docs" / "explanation" / "experiments.md").read_text(encoding="utf-8")
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if re.fullmatch(r"E\dk?", cells[0]):
            rows[cells[0].lower()] = cells
    assert set(rows) == set(STUDY)
    total = totals(expected)

    def numbers(cell: str) -> list[int]:
        return [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", cell)]

    for name, (_, _, per, agents, episodes, _) in rows.items():
        assert set(expected[name].values()) <= set(numbers(per)), (name, per)
        assert numbers(agents) == [AGENTS[name]], (name, agents)
        assert numbers(episodes) == [total[name]], (name, episodes)
