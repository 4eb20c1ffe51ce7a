"""End to end: real pytest runs of scripted agents → record files → ``limbo report``; and
Allure results of a run with failing episodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbo_plugin.cli import main

AGENTS = ("scripted:blind_retry", "scripted:verify_first", "scripted:same_key")


@pytest.mark.slow
def test_three_agents_side_by_side_in_table3(project: pytest.Pytester,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    files = []
    for agent in AGENTS:
        name = agent.split(":")[1]
        project.runpytest_subprocess("--experiment", "tiny", "--agent", agent,
                                     f"--limbo-records=runs/{name}.jsonl")
        files.append(project.path / "runs" / f"{name}.jsonl")
        assert files[-1].stat().st_size > 0
    out = project.path / "report"
    assert main(["report", *map(str, files), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    written = sum(len(f.read_text().splitlines()) for f in files)
    assert written == 3 * 8  # two templates: a fault-free episode and three faults each
    assert f"Read {written} record(s) from 3 file(s): {written} episode(s) in the tables." \
        in printed
    table = json.loads((out / "tables" / "table3_agents.json").read_text())
    assert [row["agent"] for row in table["rows"]] == sorted(AGENTS)
    by_agent = {row["agent"]: row for row in table["rows"]}
    # Proposition 1 in one table: blind retries duplicate the lost acknowledgement and
    # verify-first does not; verify-first's read-back misses the late commit of the ticket,
    # while on X (no read-back) it escalates instead of re-issuing.
    assert by_agent["scripted:blind_retry"]["dup_lost_ack"]["k"] == 2
    assert by_agent["scripted:verify_first"]["dup_lost_ack"]["k"] == 0
    assert by_agent["scripted:verify_first"]["dup_late_commit"]["k"] == 1
    assert all(row["dup_lost_ack"]["n"] == 2 for row in table["rows"])
    markdown = (out / "tables" / "table3_agents.md").read_text()
    for agent in AGENTS:
        assert f"| {agent} |" in markdown


def test_duplicating_episodes_are_failed_not_broken_in_allure(project: pytest.Pytester) -> None:
    result = project.runpytest("--experiment", "tiny", "--agent", "scripted:blind_retry",
                               "--alluredir=allure-results", "--clean-alluredir")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1
    statuses = {}
    for path in Path(project.path / "allure-results").glob("*-result.json"):
        data = json.loads(path.read_text())
        statuses[data["fullName"].split("#")[-1]] = (data["status"],
                                                     data.get("statusDetails", {}))
    failing = {name: s for name, s in statuses.items() if s[0] not in ("passed", "skipped")}
    assert failing, "the blind-retry run has failing episodes"
    assert {s for s, _ in failing.values()} == {"failed"}, failing
    _, details = failing["incident_open-i0-ticket-timeout_post-scripted-blind_retry"]
    assert "duplicated" in details.get("message", "")
