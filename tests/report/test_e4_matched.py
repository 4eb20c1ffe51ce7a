"""E4's variants against their reference episodes on matched worlds, recomputed by hand.

The pairs are rebuilt from the records' own fields (world id, agent, the probed dimension put
back), the McNemar p with scipy's binomial test, the intervals with ρ from statsmodels OLS.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from reportkit import cell, clusters, load, same_configs, within_cell_rho, write
from scipy.stats import binomtest

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.tables.base import RateCell, Skipped, Table
from limbo_plugin.report.tables.robustness import table_robustness
from limbo_plugin.stats import rate_with_interval

TEMPLATES = ("t1", "t2", "t3", "t4")


def e2(n: int, k: int, **fields: Any) -> list[EpisodeRecord]:
    return cell(n, k, templates=TEMPLATES, experiment="e2", **fields)


def e4(n: int, k: int, arm: str, *, first_instance: int = 0, **fields: Any
       ) -> list[EpisodeRecord]:
    return cell(n, k, templates=TEMPLATES, experiment="e4", arm=arm,
                first_instance=first_instance, **fields)


def dup(r: EpisodeRecord) -> bool:
    return r.duplicates > 0


def design() -> list[EpisodeRecord]:
    """E2 on 12 worlds per agent, E4 on 8 of them plus 2 of its own (duplicated, so that letting
    them in would move the rates)."""
    out: list[EpisodeRecord] = []
    for agent, shift in (("litellm:m1", 0), ("litellm:m2", 1)):
        out += e2(12, 6 + shift, agent=agent)
        out += e2(12, 3, agent=agent, condition="guard")
        out += e4(8, 2 + shift, "documentation", agent=agent, docs="no_consistency_docs")
        out += e4(2, 2, "documentation", agent=agent, docs="no_consistency_docs",
                  first_instance=5)
        out += e4(8, 5, "wording", agent=agent, condition="paraphrase_1")
        out += e4(8, 4, "operator", agent=agent, condition="guard", operator="unresponsive")
    out += e4(8, 1, "ablations", agent="litellm:m1", condition="guard-no-key")
    return out


def pairs_by_hand(records: Sequence[EpisodeRecord], agent: str, variant: dict[str, str],
                  reference: dict[str, str]) -> list[tuple[EpisodeRecord, EpisodeRecord]]:
    def has(r: EpisodeRecord, values: dict[str, str]) -> bool:
        full = {"docs": "default", "operator": "truthful", "condition": "vanilla", **values}
        return r.agent == agent and all(getattr(r, k) == v for k, v in full.items())

    ref = {r.episode_id: r for r in records if r.experiment == "e2" and has(r, reference)}
    return [(r, ref[r.episode_id]) for r in records
            if r.experiment == "e4" and has(r, variant) and r.episode_id in ref]


def check_rate(got: object, members: Sequence[EpisodeRecord],
               records: Sequence[EpisodeRecord]) -> None:
    assert isinstance(got, RateCell)
    assert (got.k, got.n) == (sum(map(dup, members)), len(members))
    rho = within_cell_rho(same_configs(records, members), dup)
    expected = rate_with_interval(clusters(members, dup), icc=rho)
    assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))


def test_each_variant_against_its_reference_on_matched_worlds_only(tmp_path: Path) -> None:
    records = design()
    files = [write(tmp_path / "e2.jsonl", [r for r in records if r.experiment == "e2"]),
             write(tmp_path / "e4.jsonl", [r for r in records if r.experiment == "e4"])]
    table = table_robustness(load(files).rows)
    assert isinstance(table, Table), table

    docs = table.find(variant="docs no_consistency_docs", agent="litellm:m1")
    assert docs["reference"] == "docs default" and docs["reference_experiment"] == "e2"
    pairs = pairs_by_hand(records, "litellm:m1", {"docs": "no_consistency_docs"}, {})
    assert docs["pairs"] == len(pairs) == 8
    check_rate(docs["dup_variant"], [v for v, _ in pairs], records)
    check_rate(docs["dup_reference"], [r for _, r in pairs], records)
    # on matched worlds the reference duplicated 6 of 8; over all its worlds 6 of 12
    assert docs["dup_reference"].k == 6  # type: ignore[union-attr]
    only_v = sum(1 for v, r in pairs if dup(v) and not dup(r))
    only_r = sum(1 for v, r in pairs if dup(r) and not dup(v))
    assert (docs["only_variant"], docs["only_reference"]) == (only_v, only_r) == (0, 4)
    assert docs["p"] == pytest.approx(binomtest(only_v, only_v + only_r, 0.5).pvalue)
    assert docs["difference"] == pytest.approx(100 * (2 - 6) / 8)
    assert (docs["dropped_variant"], docs["dropped_reference"]) == (2, 4)

    pooled = table.find(variant="docs no_consistency_docs", agent="all agents")
    assert pooled["pairs"] == 16 and pooled["dropped_variant"] == 4
    assert pooled["dup_variant"].k == 2 + 3  # type: ignore[union-attr]

    wording = table.find(variant="condition paraphrase_1", agent="litellm:m2")
    assert wording["reference"] == "condition vanilla" and wording["pairs"] == 8
    operator = table.find(variant="operator unresponsive, condition guard", agent="litellm:m1")
    assert operator["reference"] == "operator truthful, condition guard"
    check_rate(operator["dup_reference"],
               [r for _, r in pairs_by_hand(records, "litellm:m1",
                                            {"operator": "unresponsive", "condition": "guard"},
                                            {"condition": "guard"})], records)
    ablation = table.find(variant="condition guard-no-key")
    assert ablation["reference"] == "condition guard" and ablation["agent"] == "litellm:m1"
    assert ablation["dup_reference"].k == 3  # type: ignore[union-attr]
    assert "4 fired variant episode(s) had no reference partner" in table.notes[-1]
    assert {r["reference_experiment"] for r in table.rows} == {"e2"}
    assert list(dict.fromkeys(r["arm"] for r in table.rows)) == [
        "documentation", "wording", "operator", "ablations"]  # the paper's order


def test_the_partner_counts_say_they_leave_fault_free_episodes_out(tmp_path: Path) -> None:
    """Fault-free and unfired episodes are never paired: the counts of episodes without a
    partner say they cover fired ones only, and the note gives what stays outside."""
    records = [*design(),
               *e4(3, 0, "documentation", agent="litellm:m1", docs="no_consistency_docs",
                   fault_mode="none", first_instance=20),
               *e4(2, 0, "wording", agent="litellm:m1", condition="paraphrase_1",
                   fired=False, first_instance=30)]
    table = table_robustness(load([write(tmp_path / "all.jsonl", records)]).rows)
    assert isinstance(table, Table)
    fault_free = sum(1 for r in records if r.experiment == "e4" and r.family == "none")
    unfired = sum(1 for r in records if r.experiment == "e4" and r.family != "none"
                  and not r.fired)
    assert (fault_free, unfired) == (3, 2)
    docs = table.find(variant="docs no_consistency_docs", agent="litellm:m1")
    assert docs["dropped_variant"] == 2  # the fault-free three are not among them
    assert table.column("dropped_variant").title.startswith("fired ")
    assert (f"the variants' {fault_free} fault-free episode(s) and {unfired} whose fault never "
            "fired are outside every count") in table.notes[-1]


def test_a_second_reference_experiment_is_its_own_block(tmp_path: Path) -> None:
    records = [*design(), *cell(8, 0, templates=TEMPLATES, experiment="e1",
                                agent="litellm:m1")]
    table = table_robustness(load([write(tmp_path / "all.jsonl", records)]).rows)
    assert isinstance(table, Table)
    rows = [r for r in table.rows
            if r["variant"] == "docs no_consistency_docs" and r["agent"] == "litellm:m1"]
    assert [r["reference_experiment"] for r in rows] == ["e1", "e2"]
    assert rows[0]["dup_reference"].k == 0 and rows[1]["dup_reference"].k == 6  # type: ignore[union-attr]


def test_without_the_reference_the_table_says_what_to_run(tmp_path: Path) -> None:
    only_e4 = [r for r in design() if r.experiment == "e4"]
    result = table_robustness(load([write(tmp_path / "e4.jsonl", only_e4)]).rows)
    assert isinstance(result, Skipped)
    assert "run E2 beside E4" in result.reason
    plain = table_robustness(load([write(tmp_path / "e2.jsonl", e2(8, 2))]).rows)
    assert isinstance(plain, Skipped) and "no robustness variant" in plain.reason
