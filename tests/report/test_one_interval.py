"""A cell has one interval: the terminal summary, ``summary.md``, the gate, ``limbo compare`` and
``limbo report`` show the same numbers for it, from the within-cell ρ over its own
configuration's cells, whatever other records are read with it; the paper's ρ pooled per
experiment is a named report option."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from reportkit import clusters, load, record, same_configs, within_cell_rho, write

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.aggregate import summarize
from limbo_plugin.report.compare import compare_runs
from limbo_plugin.report.compare import render_text as compare_text
from limbo_plugin.report.gate import GateSpec, Threshold, run_gate
from limbo_plugin.report.icc import DUPLICATE, IccBook
from limbo_plugin.report.summary import render_markdown, render_text
from limbo_plugin.report.tables import build_tables
from limbo_plugin.report.tables.agents import table3
from limbo_plugin.report.tables.base import RateCell, Table
from limbo_plugin.stats import icc_within_cells, rate_with_interval
from limbo_plugin.store.read import read_views

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("not_executed", "lost_ack", "misleading_500", "partial_batch", "late_commit",
            "redelivery", "explicit", "none")


OUTCOMES = {  # agent → family's mode → template → duplicated, episode by episode
    "scripted:a": {"timeout_late": {"t1": "111111", "t2": "111110", "t3": "100000"},
                   "timeout_post": {"t1": "100000", "t2": "000000", "t3": "000000"}},
    "scripted:b": {"timeout_late": {"t1": "111111", "t2": "111000", "t3": "000000"},
                   "timeout_post": {"t1": "110000", "t2": "000000", "t3": "000000"}},
    "scripted:c": {"timeout_late": {"t1": "111110", "t2": "110000", "t3": "100000"},
                   "timeout_post": {"t1": "111000", "t2": "100000", "t3": "000000"}},
}


def family_effect_records() -> list[EpisodeRecord]:
    """Three agents whose late commits duplicate far more than their lost acknowledgements, and
    whose templates differ within each family: the case the pooled estimate got wrong."""
    return [record(template=template, instance=i, fault_mode=mode, agent=agent,
                   duplicated=flag == "1")
            for agent, modes in OUTCOMES.items() for mode, templates in modes.items()
            for template, flags in templates.items() for i, flag in enumerate(flags)]


def interval_of(text: str, config: str, family: str) -> tuple[str, str]:
    """``(low, high)`` of the duplicate-rate cell of ``family`` under ``config`` in a rendered
    summary (terminal or Markdown)."""
    block = text.split(config, 1)[1]
    line = next(ln for ln in block.splitlines() if re.match(rf"\|? ?{family}\b", ln))
    low, high = re.findall(r"\[([\d.]+)–([\d.]+)\]", line)[0]
    return low, high


def gate_interval(lines: list[str], agent: str, family: str) -> tuple[str, str]:
    line = next(ln for ln in lines if f"agent={agent} " in ln and f"[{family}]" in ln)
    low, high = re.search(r"95% interval ([\d.]+)–([\d.]+)%", line).groups()  # type: ignore[union-attr]
    return low, high


def report_interval(table: Table, agent: str, family: str) -> tuple[str, str]:
    got = table.find(agent=agent)[f"dup_{family}"]
    assert isinstance(got, RateCell) and got.low is not None and got.high is not None
    return f"{100 * got.low:.1f}", f"{100 * got.high:.1f}"


def test_summary_gate_and_report_agree_on_every_cell(tmp_path: Path) -> None:
    records = family_effect_records()
    path = write(tmp_path / "episodes.jsonl", records)
    outcomes = read_views(path)
    summary = summarize(outcomes, family_order=FAMILIES)
    text, markdown = "\n".join(render_text(summary)), render_markdown(summary)
    gate = GateSpec(name="g", thresholds=[
        Threshold(metric="duplicate_rate", family=f, max=1.0) for f in ("late_commit",
                                                                       "lost_ack")])
    verdict = run_gate(gate, outcomes, family_order=FAMILIES).lines()
    table = table3(load([path]).rows)
    assert isinstance(table, Table)
    for agent in ("scripted:a", "scripted:b", "scripted:c"):
        config = f"agent={agent} "
        for family in ("late_commit", "lost_ack"):
            shown = report_interval(table, agent, family)
            assert interval_of(text, config, family) == shown
            assert interval_of(markdown, config, family) == shown
            assert gate_interval(verdict, agent, family) == shown


def test_rho_is_the_within_cell_estimate_over_each_configurations_cells(tmp_path: Path
                                                                       ) -> None:
    records = family_effect_records()
    by_cell: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for r in records:
        by_cell.setdefault((r.agent, r.family), {}).setdefault(r.template, []).append(
            r.duplicates > 0)
    summary = summarize(read_views(write(tmp_path / "e.jsonl", records)),
                        family_order=FAMILIES)
    text = "\n".join(render_text(summary))
    for agent in OUTCOMES:
        own = icc_within_cells(v for (a, _), v in by_cell.items() if a == agent)
        (label,) = [g for g in summary.groups if f"agent={agent} " in g]
        assert summary.icc["duplicate"][label] == pytest.approx(own, rel=1e-12)
        assert summary.icc_cells["duplicate"][label] == 2
        block = text.split(label, 1)[1].split("\n\n", 1)[0]
        assert f"over this configuration's 2 cell(s): duplicate {own:.3f}" in block
    # the paper's estimate, pooled over the experiment's configurations, stays available
    pooled = icc_within_cells(by_cell.values())
    assert IccBook(records).rho(DUPLICATE, [None]) == pytest.approx(pooled, rel=1e-12)
    assert len({round(v, 6) for v in summary.icc["duplicate"].values()} | {round(pooled, 6)}) == 4


def test_each_experiment_has_its_own_rho() -> None:
    strong = family_effect_records()
    flat = [r.model_copy(update={"template": "t1"}) for r in family_effect_records()]
    tagged = [*(r.model_copy(update={"experiment": "e1"}) for r in strong),
              *(r.model_copy(update={"experiment": "e2"}) for r in flat)]
    book = IccBook(tagged)
    assert book.rho(DUPLICATE, ["e1"]) == pytest.approx(IccBook(strong).rho(DUPLICATE, [None]))
    assert book.rho(DUPLICATE, ["e2"]) == 0.0  # one template per cell: ρ not identified


THREE_AGENTS = """\
name: three
description: the default experiment under three scripted agents
templates: all
instances: [0, 1]
focal_writes: all
modes: all
agents: [scripted:verify_first, scripted:blind_retry, scripted:same_key]
"""
GATE = """\
name: cells
thresholds:
  - {metric: duplicate_rate, family: late_commit, max: 1.0}
  - {metric: duplicate_rate, family: lost_ack, max: 1.0}
  - {metric: duplicate_rate, family: redelivery, max: 1.0}
"""


@pytest.mark.slow
def test_a_real_run_shows_one_interval_per_cell_everywhere(pytester: pytest.Pytester) -> None:
    """The default experiment under three scripted agents: each duplicate-rate cell has the
    same interval in the terminal, ``summary.md``, the gate and ``limbo report``'s Table 3."""
    from limbo_plugin.report.build import make_report
    from limbo_plugin.spec.registry import SpecRegistry

    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    (pytester.path / "specs" / "experiments" / "three.yaml").write_text(THREE_AGENTS)
    (pytester.path / "gate.yaml").write_text(GATE)
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest_subprocess("--experiment", "three", "--tb=no", "-q", "-rN",
                                           "--limbo-gate", "gate.yaml", timeout=1800)
    terminal = result.stdout.str()
    records = pytester.path / "reports" / "episodes.jsonl"
    markdown = (pytester.path / "reports" / "episodes.summary.md").read_text()
    registry = SpecRegistry.load(pytester.path / "specs")
    report = make_report([records], registry, pytester.path / "report")
    (table,) = [t for t in report.tables if t.id == "table3_agents"]
    assert isinstance(table, Table)
    gate_lines = [ln for ln in terminal.splitlines() if "95% interval" in ln]
    checked = 0
    for agent in ("scripted:verify_first", "scripted:blind_retry", "scripted:same_key"):
        config = f"agent={agent} "
        for family in ("late_commit", "lost_ack", "redelivery"):
            shown = report_interval(table, agent, family)
            assert interval_of(terminal, config, family) == shown, (agent, family)
            assert interval_of(markdown, config, family) == shown, (agent, family)
            assert gate_interval(gate_lines, agent, family) == shown, (agent, family)
            checked += 1
    assert checked == 9


def test_a_cell_does_not_move_when_other_agents_join(tmp_path: Path) -> None:
    """Each agent in its own file: a duplicate-rate cell has one interval in its run's summary,
    its gate, ``limbo compare``, Table 3 over its file alone and Table 3 over all three files —
    Wilson on Kish at the ρ of its own configuration's cells, recomputed here by least squares."""
    records = family_effect_records()
    files = {agent: write(tmp_path / f"{i}.jsonl", [r for r in records if r.agent == agent])
             for i, agent in enumerate(OUTCOMES)}
    together = table3(load(list(files.values())).rows)
    assert isinstance(together, Table)
    dup: Callable[[EpisodeRecord], bool] = lambda r: r.duplicates > 0  # noqa: E731
    counted = [r for r in records if r.fired or r.family == "none"]
    moved = 0
    for agent, path in files.items():
        alone = table3(load([path]).rows)
        assert isinstance(alone, Table)
        outcomes = read_views(path)
        summary = summarize(outcomes, family_order=FAMILIES)
        text = "\n".join(render_text(summary))
        gate = GateSpec(name="g", thresholds=[
            Threshold(metric="duplicate_rate", family=f, max=1.0)
            for f in ("late_commit", "lost_ack")])
        verdict = run_gate(gate, outcomes, family_order=FAMILIES).lines()
        other = next(p for a, p in files.items() if a != agent)
        comparison = compare_runs(outcomes, read_views(other), family_order=FAMILIES)
        for family in ("late_commit", "lost_ack"):
            members = [r for r in counted if r.agent == agent and r.family == family]
            expected = rate_with_interval(
                clusters(members, dup), icc=within_cell_rho(same_configs(counted, members), dup))
            shown = f"{100 * expected.low:.1f}", f"{100 * expected.high:.1f}"
            cell_alone = alone.find(agent=agent)[f"dup_{family}"]
            cell_together = together.find(agent=agent)[f"dup_{family}"]
            assert isinstance(cell_alone, RateCell) and cell_alone == cell_together
            assert (cell_alone.low, cell_alone.high) == (pytest.approx(expected.low),
                                                         pytest.approx(expected.high))
            assert interval_of(text, f"agent={agent} ", family) == shown
            (line,) = [ln for ln in verdict if f"[{family}]" in ln]  # one configuration
            assert re.search(r"95% interval ([\d.]+)–([\d.]+)%", line).groups() == shown  # type: ignore[union-attr]
            (row,) = [f for f in comparison.families if f.family == family]
            assert row.a_duplicate is not None
            assert (row.a_duplicate.low, row.a_duplicate.high) == (
                pytest.approx(expected.low), pytest.approx(expected.high))
            pooled = within_cell_rho(counted, dup)
            pooled_estimate = rate_with_interval(clusters(members, dup), icc=pooled)
            moved += abs(pooled_estimate.high - expected.high) > 0.005
        assert any(f"{shown[0]}–{shown[1]}]" in line
                   for line in compare_text(comparison))  # the rendered comparison shows it
    assert moved  # the paper's pooled ρ would have moved these cells


def test_the_papers_pooled_rho_is_a_named_option(tmp_path: Path) -> None:
    records = family_effect_records()
    rows = load([write(tmp_path / "e.jsonl", records)]).rows
    tables = {t.id: t for t in build_tables(rows, rho="experiment")}
    table = tables["table3_agents"]
    assert isinstance(table, Table)
    dup: Callable[[EpisodeRecord], bool] = lambda r: r.duplicates > 0  # noqa: E731
    counted = [r for r in records if r.fired or r.family == "none"]
    pooled = within_cell_rho(counted, dup)
    for agent in OUTCOMES:
        members = [r for r in counted if r.agent == agent and r.family == "late_commit"]
        expected = rate_with_interval(clusters(members, dup), icc=pooled)
        got = table.find(agent=agent)["dup_late_commit"]
        assert isinstance(got, RateCell)
        assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    note = " ".join(table.notes)
    assert "pooled once per outcome and experiment" in note
    assert f"duplicate {pooled:.3f} (6 cells)" in note
    default = {t.id: t for t in build_tables(rows)}["table3_agents"]
    assert isinstance(default, Table)
    assert "each configuration's own cells" in " ".join(default.notes)
    assert "over 3 configurations (2 cells each)" in " ".join(default.notes)


def test_rho_of_one_on_a_tiny_design_is_said(tmp_path: Path) -> None:
    """Templates that always agree within a cell and differ between them: ρ = 1.0, each
    template counts once, and both the summary and the table's note say so."""
    records = [record(template=t, instance=i, fault_mode="timeout_post", agent="scripted:a",
                      duplicated=t == "t1") for t in ("t1", "t2", "t3") for i in range(3)]
    path = write(tmp_path / "tiny.jsonl", records)
    summary = summarize(read_views(path), family_order=FAMILIES)
    assert next(iter(summary.icc["duplicate"].values())) == 1.0
    assert "ρ reaches 1.0 for duplicate" in "\n".join(render_text(summary))
    table = table3(load([path]).rows)
    assert isinstance(table, Table)
    assert "ρ reaches 1.0" in " ".join(table.notes)


def test_no_rho_line_when_every_episode_errored(tmp_path: Path) -> None:
    records = [record(template="t1", instance=i, error="harness crashed") for i in range(3)]
    summary = summarize(read_views(write(tmp_path / "e.jsonl", records)),
                        family_order=FAMILIES)
    text = "\n".join(render_text(summary)) + render_markdown(summary)
    assert "ρ" not in text and "3 episode(s) ended in an infrastructure error" in text


def test_reproduce_builds_the_papers_tables_with_the_pooled_rho() -> None:
    from limbo_plugin.reproduction.design import PAPER
    from limbo_plugin.reproduction.steps import report_commands
    from limbo_plugin.reproduction.study import Study
    from limbo_plugin.spec.registry import SpecRegistry

    study = Study(out=Path("out"), registry=SpecRegistry.load(ROOT / "specs"), agents=None,
                  harnesses=None)
    commands = report_commands(study, study.plan())
    assert commands and all(c[c.index("--rho") + 1] == "experiment" for _, c in commands)
    (e4,) = [item for item in PAPER if item.name.startswith("§6.6 robustness")]
    assert e4.id == "e4_matched"
