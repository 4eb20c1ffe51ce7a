"""The paper's Tables 1, 2 and 11 come from the spec tree: each cell checked here is recomputed
from the YAML files themselves (``yaml.safe_load``), not through the registry the tables read,
and ``limbo report`` writes all three for any records file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from reportkit import cell, write

from limbo_plugin.cli import main
from limbo_plugin.report.tables import Table, build_tables
from limbo_plugin.report.tables.spec_tables import (
    table1_tools,
    table2_fault_modes,
    table11_descriptions,
)
from limbo_plugin.spec.registry import SpecRegistry

SPECS = Path(__file__).resolve().parents[2] / "specs"
SPEC_IDS = ["table1_tools", "table2_fault_modes", "table11_descriptions"]


def _yaml_tools() -> dict[str, tuple[str, dict[str, Any]]]:
    """Every tool of every service file, by name: (service, the tool's YAML mapping)."""
    tools = {}
    for path in sorted((SPECS / "services").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for tool in doc["tools"]:
            tools[tool["name"]] = (doc["service"], tool)
    return tools


def _yaml_modes() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((SPECS / "faults" / "modes.yaml").read_text(encoding="utf-8"))
    return {mode["name"]: mode for mode in doc["modes"]}


def _yaml_classes() -> dict[str, str]:
    doc = yaml.safe_load((SPECS / "faults" / "modes.yaml").read_text(encoding="utf-8"))
    return {family["name"]: family["class"] for family in doc["families"]}


def _table(result: object) -> Table:
    assert isinstance(result, Table), result
    return result


def test_table1_has_every_tool_with_its_key_lag_and_read_back(registry: SpecRegistry) -> None:
    table = _table(table1_tools(registry))
    tools = _yaml_tools()
    assert sorted(str(r["tool"]) for r in table.rows) == sorted(tools)
    for name in ("billing_create_charge", "mastodon_publish", "weibo_publish", "email_send",
                 "db_insert_rows", "tickets_create"):
        service, spec = tools[name]
        contract = spec["contract"]
        row = table.find(tool=name)
        assert row["service"] == service and row["kind"] == "write"
        assert row["key"] == (contract.get("key_param") or "no")
        assert row["idempotency"] == contract["idempotency"]
        assert row["read_back"] == contract["read_back"]["tool"]
        assert row["lag_s"] == contract.get("visibility_lag_s", 0)
        assert row["consistency"] == ("eventual" if contract.get("visibility_lag_s") else "strong")
    # SPEC §2: the Weibo listing lags 120 s, only two writes accept a key natively.
    assert table.find(tool="weibo_publish")["lag_s"] == 120
    assert table.find(tool="email_send")["reversible"] == "no (irreversible)"
    assert table.find(tool="weibo_publish")["reversible"] == "yes / social_delete_post"
    for update in ("tickets_set_status", "db_upsert"):  # SPEC §2: reversible by setting back
        assert table.find(tool=update)["reversible"] == "yes"
    keyed = sorted(n for n, (_, t) in tools.items()
                   if t["contract"].get("key_param")
                   and t["contract"]["idempotency"] in ("key_optional", "non_idempotent"))
    assert keyed == ["billing_create_charge", "mastodon_publish"]
    writes = [t for t in tools.values()
              if t[1]["contract"]["idempotency"] in ("key_optional", "non_idempotent")]
    assert table.notes[0].startswith(f"{len(writes)} non-idempotent write paths, of which 2 ")
    assert table.find(tool="x_publish")["read_back"] == "none"
    assert table.find(tool="finish")["kind"] == "general"


def test_table2_lists_every_mode_with_family_and_hidden_outcome(registry: SpecRegistry) -> None:
    table = _table(table2_fault_modes(registry))
    modes, classes = _yaml_modes(), _yaml_classes()
    assert [r["mode"] for r in table.rows] == list(modes)
    for name, spec in modes.items():
        row = table.find(mode=name)
        assert (row["group"], row["family"], row["hidden_outcome"]) == (
            spec["group"], spec["family"], spec["hidden_outcome"])
        assert row["family_class"] == classes[spec["family"]]
    late = table.find(mode="timeout_late")
    assert (late["family"], late["hidden_outcome"], late["family_class"]) == (
        "late_commit", "late", "unresolvable")
    assert "request timed out after 30s" in str(late["agent_sees"])
    assert str(late["agent_sees"]).startswith("after 30 s:")
    assert table.find(mode="redelivery")["agent_sees"] == "the normal success response"
    assert '"retry_after_s": 10' in str(table.find(mode="http503")["agent_sees"])


def test_table11_descriptions_are_the_native_default_text(registry: SpecRegistry) -> None:
    table = _table(table11_descriptions(registry))
    tools = _yaml_tools()
    assert sorted(str(r["tool"]) for r in table.rows) == sorted(tools)
    for name in ("billing_create_charge", "weibo_list_posts", "tickets_search", "x_publish"):
        _, spec = tools[name]
        expected = " ".join(s.strip() for s in (spec["description"], spec.get("consistency"))
                            if s)
        assert table.find(tool=name)["description"] == expected
    # The default documentation keeps the consistency sentence; the native contract adds no
    # key sentence to a write without a key, and the default variant no warning.
    weibo = str(table.find(tool="weibo_list_posts")["description"])
    assert "more than 120 seconds ago" in weibo
    assert str(table.find(tool="tickets_create")["description"]) == " ".join(
        tools["tickets_create"][1]["description"].split())


def test_spec_tables_come_first_only_with_a_registry(registry: SpecRegistry) -> None:
    assert [r.id for r in build_tables([], (), registry)[:3]] == SPEC_IDS
    assert not {r.id for r in build_tables([], ())} & set(SPEC_IDS)


def test_limbo_report_writes_the_spec_tables(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    records = write(tmp_path / "a.jsonl", cell(6, 2))
    assert main(["report", str(records), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "Table 1: services, tools and contracts (table1_tools)" in out
    summary = json.loads((tmp_path / "out" / "report.json").read_text())
    assert summary["tables"][:3] == SPEC_IDS
    markdown = (tmp_path / "out" / "tables" / "table2_fault_modes.md").read_text()
    assert "| T | timeout_late | late_commit | unresolvable | late |" in markdown
    rows = json.loads((tmp_path / "out" / "tables" / "table11_descriptions.json").read_text())
    assert "billing_create_charge" in json.dumps(rows)
    assert (tmp_path / "out" / "tables" / "table1_tools.csv").read_text().count("\n") > 30


def test_the_paper_index_points_tables_1_2_and_11_at_the_e1_report(tmp_path: Path) -> None:
    from limbo_plugin.reproduction.steps import write_index
    from limbo_plugin.reproduction.study import Study

    out = tmp_path / "study"
    records = write(tmp_path / "a.jsonl", cell(6, 2))
    assert main(["report", str(records), "--out", str(out / "report" / "e1")]) == 0
    study = Study(out=out, registry=SpecRegistry.load(SPECS), agents=None, harnesses=None)
    write_index(study, ["e1"])
    items = {i["item"]: i for i in json.loads((out / "paper.json").read_text())}
    for name, table_id in zip(("Table 1", "Table 2", "Table 11"), SPEC_IDS, strict=True):
        assert items[name]["file"] == f"report/e1/tables/{table_id}.md", items[name]
        assert (out / str(items[name]["file"])).is_file()
    assert "[report/e1/tables/table11_descriptions.md]" in (out / "paper.md").read_text()
