"""Small things a new user trips over: help texts, listings, the documentation's loops, the
docs' markup, and the order of conditions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from limbo_plugin.cli import main
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.report.aggregate import summarize
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry

ROOT = Path(__file__).resolve().parents[1]
REPORTS_GUIDE = (ROOT / "docs" / "how-to" / "reports.md").read_text(encoding="utf-8")
OPTIONS_REFERENCE = (ROOT / "docs" / "reference" / "pytest-options.md").read_text(encoding="utf-8")


def help_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


def test_help_texts_say_what_arguments_are_without_markup(
        capsys: pytest.CaptureFixture[str]) -> None:
    top = help_of([], capsys)
    assert "``" not in top and "The limbo command" in top
    gate = help_of(["gate"], capsys)
    assert re.search(r"GATE\s+a gate spec", gate)
    assert re.search(r"--records RECORDS\s+the records to judge", gate)


def test_policies_are_listed_with_what_they_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    for line in lines:
        name, _, description = line.partition(" ")
        assert name.startswith("scripted:") and len(description.strip()) > 20
    assert any(line.startswith("scripted:same_key") and "key" in line for line in lines)


def test_show_prints_the_fault_readably(tmp_path: Path, registry: SpecRegistry,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    key = next(iter_worlds(registry, ["cross_post"], [0], ["post_x"], ["timeout_late"]))
    records = tmp_path / "r.jsonl"
    records.write_text(run_episode(key, RunConfig(), registry=registry).model_dump_json() + "\n")
    assert main(["show", key.id, "--records", str(records)]) == 0
    fault = capsys.readouterr().out.splitlines()[1]
    assert "{" not in fault and "'" not in fault and "None" not in fault
    assert fault.startswith("  fault: timeout_late, fired: yes (") and "delay_s=" in fault


def test_the_docs_loops_and_keys() -> None:
    loop = REPORTS_GUIDE[REPORTS_GUIDE.index("for policy in blind_retry"):]
    loop = loop[:loop.index("done")]
    assert "--tb=no -rN" in loop, "thousands of failure blocks otherwise"
    contract = OPTIONS_REFERENCE.split("### `--contract`", 1)[1].split("\n### ", 1)[0]
    assert "same_key" in contract and "changes nothing" in contract


def test_the_records_docs_are_markdown_not_sphinx() -> None:
    text = (ROOT / "docs" / "records.md").read_text(encoding="utf-8")
    assert "``" not in text
    assert not re.search(r":(class|func|attr|meth|mod):`", text)


def test_conditions_with_numbers_sort_as_numbers(registry: SpecRegistry) -> None:
    key = next(iter_worlds(registry, ["cross_post"], [0], ["post_x"], ["timeout_late"]))
    records = [run_episode(key, RunConfig(condition=c), registry=registry)
               for c in ("wait_3600", "wait_60", "wait_300")]
    labels = list(summarize(records, family_order=registry.family_order).groups)
    assert [re.search(r"condition=(\S+)", label).group(1)  # type: ignore[union-attr]
            for label in labels] == ["wait_60", "wait_300", "wait_3600"]
