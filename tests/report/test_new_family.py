"""ARCHITECTURE.md's family recipe reaches the report: a new family of late commits, one YAML
entry, appears in every table its hidden outcome belongs to — selected on the fault spec's
labels (hidden outcome, group, late delay), never on mode names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reportkit import write

from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.report.load import SpecFacts, load_records
from limbo_plugin.report.tables import build_tables
from limbo_plugin.report.tables.base import RateCell, Table
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[2] / "specs"
FAMILY = """\
  - {name: slow_commit, class: unresolvable,
     description: the timed-out request is still in flight and commits ten minutes later}
"""
MODE = """\
  - name: timeout_slow
    group: T
    family: slow_commit
    hidden_outcome: late
    execute: late
    late_delay: fixed
    late_delay_s: 600
    cost_s: 30
    response: {error: {type: timeout, message: request timed out after 30s}}
    description: The request is still in flight and commits 600 s after it was sent.

"""


def count(value: object) -> int:
    """A table's episode count: an int, never a rate cell or a label."""
    assert isinstance(value, int), value
    return value


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    root = tmp_path_factory.mktemp("new-family")
    shutil.copytree(SPECS, root / "specs")
    modes = root / "specs" / "faults" / "modes.yaml"
    text = modes.read_text()
    text = text.replace("  - {name: explicit,", FAMILY + "  - {name: explicit,", 1)
    text = text.replace("modes:\n", "modes:\n" + MODE, 1)
    modes.write_text(text)
    registry = SpecRegistry.load(root / "specs")
    keys = list(iter_worlds(registry, ["release_announcement", "incident_open",
                                       "customer_notice"], [0], "all",
                            ["timeout_pre", "timeout_post", "timeout_slow", "timeout_late"]))
    records = [run_episode(key, RunConfig(agent=agent, contract=contract), registry=registry)
               for agent in ("scripted:verify_first", "scripted:blind_retry")
               for contract in ("native", "keys_everywhere") for key in keys]
    path = write(root / "episodes.jsonl", records)
    loaded = load_records([path], SpecFacts.of(registry))
    assert any(r.family == "slow_commit" and r.fired for r in loaded.rows)
    return {t.id: t for t in build_tables(loaded.rows, loaded.repeats) if isinstance(t, Table)}


def test_the_new_family_has_its_column_in_table3(tables: dict[str, Table]) -> None:
    cell = tables["table3_agents"].rows[0]["dup_slow_commit"]
    assert isinstance(cell, RateCell) and cell.n > 0


def test_the_new_family_is_a_row_of_table5(tables: dict[str, Table]) -> None:
    row = tables["table5_contracts"].find(faults="slow_commit")
    assert isinstance(row["native|vanilla"], RateCell) and row["native|vanilla"].n > 0


def test_the_new_late_commits_are_in_table6(tables: dict[str, Table]) -> None:
    rows = tables["table6_waiting"].rows
    fixed = [r for r in rows if r["delay"] == "fixed"]
    episodes = sum(count(r["episodes"]) for r in fixed)
    late = sum(1 for r in tables["table3_agents"].rows)  # one row per configuration
    assert late and episodes > 0
    slow = tables["table3_agents"].rows[0]["dup_slow_commit"]
    assert isinstance(slow, RateCell)
    # timeout_late and timeout_slow both draw a fixed delay: both are in the fixed rows.
    late_cell = tables["table3_agents"].rows[0]["dup_late_commit"]
    assert isinstance(late_cell, RateCell)
    per_config = episodes / len(tables["table3_agents"].rows)
    assert per_config == slow.n + late_cell.n


def test_the_new_family_enters_the_unresolvable_decomposition(tables: dict[str, Table]) -> None:
    table = tables["table4_shapley"]
    counts = next(r for r in table.rows if r["factor"] == "episodes")
    slow = tables["table3_agents"].rows[0]["dup_slow_commit"]
    late = tables["table3_agents"].rows[0]["dup_late_commit"]
    assert isinstance(slow, RateCell) and isinstance(late, RateCell)
    agents = 2
    assert counts["unresolvable"] == agents * (slow.n + late.n)


def test_the_new_family_is_an_ambiguous_fault_for_h4_and_h1(tables: dict[str, Table]) -> None:
    assert "h4_stakes" in tables
    h1 = tables.get("h1_regression")
    if h1 is not None:
        total = max(count(r["episodes"]) for r in h1.rows)
        slow = tables["table3_agents"].rows[0]["dup_slow_commit"]
        assert isinstance(slow, RateCell) and total >= 2 * slow.n
