"""Machine-readable tables carry every number at full precision: a tiny p-value is written as
itself in CSV and JSON, never rounded to 0; only Markdown and HTML format numbers."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from reportkit import load, record, write
from scipy.stats import binomtest

from limbo_plugin.report.render import write_table
from limbo_plugin.report.tables.base import Table
from limbo_plugin.report.tables.mcnemar import table_appendix_b


def test_a_tiny_p_value_keeps_its_digits_in_csv_and_json(tmp_path: Path) -> None:
    # 60 worlds: vanilla never exactly once, the guard always: 60 discordant pairs one way
    vanilla = [record(template=f"t{i % 3}", instance=i, eos=False, experiment="e2")
               for i in range(60)]
    guard = [record(template=f"t{i % 3}", instance=i, eos=True, condition="guard",
                    experiment="e2") for i in range(60)]
    rows = load([write(tmp_path / "r.jsonl", [*vanilla, *guard])]).rows
    table = table_appendix_b(rows)
    assert isinstance(table, Table)
    expected = binomtest(0, 60, 0.5).pvalue  # exact McNemar, computed apart
    assert 0 < expected < 1e-15
    write_table(table, tmp_path / "tables")
    (row,) = json.loads((tmp_path / "tables" / f"{table.id}.json").read_text())["rows"]
    assert row["p"] == expected and row["p_holm"] == expected
    with (tmp_path / "tables" / f"{table.id}.csv").open() as f:
        (line,) = csv.DictReader(f)
    assert float(line["p"]) == expected and float(line["p_holm"]) == expected
    assert float(line["eos_vanilla"]) == 0.0 and float(line["eos_condition"]) == 1.0
    markdown = (tmp_path / "tables" / f"{table.id}.md").read_text()
    assert f"{expected:.1e}" in markdown  # the human form stays short


def test_rate_bounds_keep_their_digits(tmp_path: Path) -> None:
    from limbo_plugin.report.tables.agents import table3

    records = [record(template=f"t{i % 3}", instance=i, duplicated=i < 1) for i in range(7)]
    table = table3(load([write(tmp_path / "r.jsonl", records)]).rows)
    assert isinstance(table, Table)
    write_table(table, tmp_path / "tables")
    got = table.rows[0]["dup_lost_ack"]
    (row,) = json.loads((tmp_path / "tables" / f"{table.id}.json").read_text())["rows"]
    assert row["dup_lost_ack"]["low"] == got.low  # type: ignore[union-attr]
    assert row["dup_lost_ack"]["rate"] == 1 / 7
    with (tmp_path / "tables" / f"{table.id}.csv").open() as f:
        (line,) = csv.DictReader(f)
    assert float(line["dup_lost_ack_high"]) == got.high  # type: ignore[union-attr]
    assert float(line["dup_lost_ack"]) == 1 / 7
