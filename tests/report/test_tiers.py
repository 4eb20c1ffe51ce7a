"""Model tiers from the experiment spec: Table 3 and Table 10 pooled by tier, and the models a
spec leaves out of pooled statistics (the paper's gpt-4.1) in no pooled row or fit.

The pooled cells are recomputed from the records by hand (which models a tier holds is read
from the spec file with a YAML parser, not through the report's loader).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from reportkit import cell, clusters, load, same_configs, within_cell_rho, write
from scipy.stats import binomtest

from limbo_plugin.errors import SpecError
from limbo_plugin.experiments import load_experiment
from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.tables.agents import table3, table3_tiers
from limbo_plugin.report.tables.base import RateCell, Skipped, Table
from limbo_plugin.report.tables.cue import table10
from limbo_plugin.report.tables.readpath import table_h3
from limbo_plugin.report.tables.regression import h1_rows
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.stats import rate_with_interval

SPECS = Path(__file__).resolve().parents[2] / "specs"
TEMPLATES = ("t1", "t2", "t3")
FRONTIER_A, FRONTIER_B = "litellm:openai/gpt-6-sol", "litellm:openai/claude-opus-5.5"
WEAKER = "litellm:openai/gpt-5.4-mini"
UNPOOLED = "litellm:openai/gpt-4.1"


def spec_models(experiment: str) -> dict[str, dict[str, Any]]:
    data = yaml.safe_load((SPECS / "experiments" / f"{experiment}.yaml").read_text())
    return data["models"]  # type: ignore[no-any-return]


def dup(r: EpisodeRecord) -> bool:
    return r.duplicates > 0


def test_the_specs_label_the_papers_tiers() -> None:
    """Paper §6.1: six frontier models, two weaker ones, gpt-4.1 out of pooled statistics."""
    models = spec_models("e1")
    tiers = {agent: label.get("tier") for agent, label in models.items()}
    assert sorted(a for a, t in tiers.items() if t == "weaker") == [
        "litellm:openai/gpt-5.4-mini", "litellm:openai/mai-code-1.1-flash"]
    assert sum(t == "frontier" for t in tiers.values()) == 6
    assert models[UNPOOLED]["pooled"] is False and tiers[UNPOOLED] is None
    assert all(label.get("pooled", True) for agent, label in models.items() if agent != UNPOOLED)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("litellm:openai/gpt-5.4-mini: {tier: weaker}", "litellm:openai/gpt-5.4-mini: {tier: weak}",
     "models.litellm:openai/gpt-5.4-mini.tier Input should be 'frontier' or 'weaker'"),
    ("  litellm:openai/grok-4.7: {tier: frontier}", "  litellm:openai/grok-4.8: {tier: frontier}",
     "'litellm:openai/grok-4.8' is not an agent of this experiment; its agents: "),
])
def test_a_bad_label_is_one_line_at_its_line(tmp_path: Path, old: str, new: str,
                                             message: str) -> None:
    root = tmp_path / "specs"
    shutil.copytree(SPECS, root)
    file = root / "experiments" / "e1.yaml"
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))
    line = next(i for i, t in enumerate(file.read_text().splitlines(), 1) if new.strip() in t)
    with pytest.raises(SpecError) as info:
        load_experiment(file, SpecRegistry.load(root))
    text = str(info.value)
    assert "\n" not in text
    assert re.match(rf"{re.escape(str(file))}:{line}: ", text), text
    assert message in text


def e1(n: int, k: int, agent: str, **fields: Any) -> list[EpisodeRecord]:
    return cell(n, k, templates=TEMPLATES, experiment="e1", agent=agent, **fields)


def design() -> list[EpisodeRecord]:
    return [*e1(9, 1, FRONTIER_A), *e1(9, 2, FRONTIER_B), *e1(9, 6, WEAKER),
            *e1(9, 9, UNPOOLED),  # would move every pooled cell it entered
            *e1(6, 5, FRONTIER_A, fault_mode="timeout_late"),
            *e1(6, 6, UNPOOLED, fault_mode="timeout_late")]


def test_table3_pools_each_tier_and_leaves_out_the_unpooled_model(tmp_path: Path) -> None:
    records = design()
    rows = load([write(tmp_path / "e1.jsonl", records)]).rows
    table = table3_tiers(rows)
    assert isinstance(table, Table), table
    assert [r["tier"] for r in table.rows] == ["frontier", "weaker"]
    frontier = table.find(tier="frontier")
    assert frontier["models"] == 2
    labels = spec_models("e1")
    members = [r for r in records if labels[r.agent].get("tier") == "frontier"
               and labels[r.agent].get("pooled", True) and r.family == "lost_ack"]
    got = frontier["dup_lost_ack"]
    assert isinstance(got, RateCell) and (got.k, got.n) == (3, 18)
    rho = within_cell_rho(same_configs([r for r in records if r.fired or r.family == "none"],
                                       members), dup)
    expected = rate_with_interval(clusters(members, dup), icc=rho)
    assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert frontier["dup_late_commit"].k == 5  # type: ignore[union-attr]
    assert table.find(tier="weaker")["dup_lost_ack"].k == 6  # type: ignore[union-attr]
    assert any("leave out litellm:openai/gpt-4.1" in n for n in table.notes)
    # the per-model table still shows it
    assert isinstance(per_model := table3(rows), Table)
    assert per_model.find(agent=UNPOOLED)["dup_lost_ack"].k == 9  # type: ignore[union-attr]


def test_without_tiers_there_is_no_tier_table(tmp_path: Path) -> None:
    result = table3_tiers(load([write(tmp_path / "r.jsonl", cell(6, 2))]).rows)
    assert isinstance(result, Skipped) and "no agent has a tier" in result.reason


def test_table10_pools_each_tier(tmp_path: Path) -> None:
    cued = [*e1(9, 1, FRONTIER_A), *e1(9, 0, FRONTIER_B), *e1(9, 3, WEAKER)]
    uncued = [*cell(9, 3, templates=TEMPLATES, experiment="e6", agent=FRONTIER_A,
                    instruction="no_cue"),
              *cell(9, 2, templates=TEMPLATES, experiment="e6", agent=FRONTIER_B,
                    instruction="no_cue"),
              *cell(9, 8, templates=TEMPLATES, experiment="e6", agent=WEAKER,
                    instruction="no_cue")]
    table = table10(load([write(tmp_path / "e1.jsonl", cued),
                          write(tmp_path / "e6.jsonl", uncued)]).rows)
    assert isinstance(table, Table), table
    assert [r["agent"] for r in table.rows] == [*sorted((FRONTIER_A, FRONTIER_B, WEAKER)),
                                                "frontier (2 models)", "weaker (1 model)",
                                                "all agents"]
    frontier = table.find(agent="frontier (2 models)")
    pairs = [(a, b) for a in cued for b in uncued
             if a.episode_id == b.episode_id and a.agent == b.agent
             and a.agent in (FRONTIER_A, FRONTIER_B)]
    only_cue = sum(1 for a, b in pairs if dup(a) and not dup(b))
    only_no_cue = sum(1 for a, b in pairs if dup(b) and not dup(a))
    assert (frontier["pairs"], frontier["only_default"], frontier["only_no_cue"]) == (
        18, only_cue, only_no_cue) == (18, 0, 4)
    assert frontier["p"] == pytest.approx(binomtest(0, 4, 0.5).pvalue)
    assert frontier["dup_default"].k == 1 and frontier["dup_no_cue"].k == 5  # type: ignore[union-attr]


def test_pooled_fits_leave_out_the_unpooled_model(tmp_path: Path) -> None:
    eventual = {"focal_verification": "eventual", "focal_tool": "email_send"}

    def verified(n: int, k: int, agent: str, first: int, **fields: Any) -> list[EpisodeRecord]:
        return [r.model_copy(update={"behaviour": "verify_then_skip"})
                for r in cell(n, k, templates=("t1", "t2", "t3", "t4"), experiment="e1",
                              agent=agent, first_instance=first, **fields)]

    records = [*verified(12, 4, FRONTIER_A, 0, **eventual), *verified(12, 1, FRONTIER_A, 20),
               *verified(12, 12, UNPOOLED, 0, **eventual), *verified(12, 0, UNPOOLED, 20)]
    rows = load([write(tmp_path / "e1.jsonl", records)]).rows
    assert {d["model"] for d in h1_rows(rows)} == {"openai/gpt-6-sol"}
    table = table_h3(rows)
    assert isinstance(table, Table)
    pooled = table.find(agent="all agents")
    assert pooled["episodes"] == 24 and pooled["eventual"].k == 4  # type: ignore[union-attr]
    assert table.find(agent=UNPOOLED)["eventual"].k == 12  # type: ignore[union-attr]
    assert any("leave out litellm:openai/gpt-4.1" in n for n in table.notes)
