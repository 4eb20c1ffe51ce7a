"""A cell has one interval: the terminal summary, ``summary.md``, the gate and ``limbo report``
show the same numbers for it, from the one within-cell ρ per outcome and experiment."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from reportkit import load, record, write

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.aggregate import summarize
from limbo_plugin.report.gate import GateSpec, Threshold, run_gate
from limbo_plugin.report.icc import DUPLICATE, IccBook
from limbo_plugin.report.outcomes import read_outcomes
from limbo_plugin.report.summary import render_markdown, render_text
from limbo_plugin.report.tables.agents import table3
from limbo_plugin.report.tables.base import RateCell, Table
from limbo_plugin.stats import icc_within_cells

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
    outcomes = read_outcomes(path)
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


def test_rho_is_the_within_cell_estimate_of_the_experiment(tmp_path: Path) -> None:
    records = family_effect_records()
    by_cell: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for r in records:
        by_cell.setdefault((r.agent, r.family), {}).setdefault(r.template, []).append(
            r.duplicates > 0)
    expected = icc_within_cells(by_cell.values())
    assert expected > 0.05
    summary = summarize(read_outcomes(write(tmp_path / "e.jsonl", records)),
                        family_order=FAMILIES)
    assert summary.icc["duplicate"] == {"—": pytest.approx(expected, abs=1e-6)}
    assert IccBook(records).rho(DUPLICATE, [None]) == pytest.approx(expected, rel=1e-12)
    assert "ρ by template" in "\n".join(render_text(summary))


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
