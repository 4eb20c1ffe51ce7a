"""With a gate, what CI shows is the gate: each check is a test result (terminal, JUnit,
Allure), the episodes are measurements that pass whatever the agent did (their verdict a
property), and the exit status is the gate's — or the infrastructure one, which a failed gate
does not share."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from limbo_plugin.plugin.controller import INFRASTRUCTURE_ERROR

GATE = """\
name: test_gate
thresholds:
  - {{metric: duplicate_rate, family: late_commit, max: {late}}}
  - {{metric: eos_rate, family: none, min: 1.0}}
"""
RUN = ["--experiment", "small", "--agent", "scripted:same_key", "--limbo-gate", "gate.yaml",
       "--junitxml", "junit.xml"]


def junit(project: pytest.Pytester) -> tuple[dict[str, str], list[ET.Element]]:
    suite = ET.parse(project.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    return dict(suite.attrib), suite.findall("testcase")


def properties(case: ET.Element) -> dict[str, str]:
    return {p.attrib["name"]: p.attrib["value"] for p in case.iter("property")}


@pytest.mark.parametrize(("late", "passes"), [(0.5, True), (0.4, False)])
def test_junit_and_the_exit_status_agree_with_the_gate(project: pytest.Pytester, late: float,
                                                       passes: bool) -> None:
    (project.path / "gate.yaml").write_text(GATE.format(late=late))
    result = project.runpytest(*RUN)
    suite, cases = junit(project)
    gate_cases = [c for c in cases if c.attrib["classname"] == "gate.yaml"]
    episodes = [c for c in cases if c.attrib["classname"] != "gate.yaml"]
    # same_key duplicates the key-less ticket: on a late commit (a failure) and on redelivery
    # (an expected failure); with a gate both are measurements, neither fails nor is skipped
    assert len(episodes) == 8
    assert all(c.find("failure") is None and c.find("skipped") is None for c in episodes)
    verdicts = sorted(properties(c)["limbo_verdict"] for c in episodes)
    assert verdicts == ["expected failure", "failed", *["passed"] * 6]
    assert any("duplicated" in properties(c).get("limbo_failure", "") for c in episodes)
    names = [c.attrib["name"] for c in gate_cases]
    assert names == [f"duplicate_rate[late_commit] ≤ {100 * late:.1f}%", "eos_rate[none] ≥ 100.0%"]
    failed = [c for c in gate_cases if c.find("failure") is not None]
    assert suite["failures"] == str(len(failed)) and suite["errors"] == "0"
    if passes:
        assert result.ret == pytest.ExitCode.OK and not failed
        result.stdout.fnmatch_lines(["*10 passed*"])
    else:
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert [c.attrib["name"] for c in failed] == [names[0]]
        assert "50.0% (1/2" in (failed[0].find("failure").attrib["message"])  # type: ignore[union-attr]
        result.stdout.fnmatch_lines(["*1 failed, 9 passed*"])
        assert "FAILED gate.yaml::duplicate_rate[late_commit]" in result.stdout.str()


def test_without_a_gate_an_episode_that_duplicated_still_fails(project: pytest.Pytester
                                                               ) -> None:
    result = project.runpytest("--experiment", "small", "--agent", "scripted:same_key",
                               "--junitxml", "junit.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suite, cases = junit(project)
    assert len(cases) == 8 and suite["failures"] == "1" and suite["skipped"] == "1"
    assert all("limbo_verdict" not in properties(c) for c in cases)


FLAKY_AGENT = """\
from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.agents.scripted import ScriptedAgent

episodes = []


class Flaky:
    def run(self, session):
        episodes.append(session)
        if len(episodes) == 1:
            raise InfrastructureError("gateway went away: 503 Service Unavailable")
        ScriptedAgent("same_key").run(session)
"""


def test_an_infrastructure_error_has_its_own_exit_status_with_a_gate(
        project: pytest.Pytester) -> None:
    (project.path / "gate.yaml").write_text(GATE.format(late=1.0))
    (project.path / "flaky_agent.py").write_text(FLAKY_AGENT)
    project.syspathinsert()
    result = project.runpytest("--experiment", "small", "--agent", "python:flaky_agent:Flaky",
                               "--limbo-gate", "gate.yaml", "--junitxml", "junit.xml",
                               "--tb=no")
    assert result.ret == INFRASTRUCTURE_ERROR, "not the gate's 0 or 1"
    suite, _ = junit(project)
    assert suite["errors"] == "1"
    result.stdout.fnmatch_lines(["Infrastructure errors: 1 episode(s), by cause*",
                                 "  1 × *gateway went away: 503 Service Unavailable"])


def test_gate_checks_are_allure_results(project: pytest.Pytester) -> None:
    (project.path / "gate.yaml").write_text(GATE.format(late=0.4))
    project.runpytest("--experiment", "small", "--agent", "scripted:same_key",
                      "--limbo-gate", "gate.yaml", "--alluredir", "allure-results")
    results = [json.loads(p.read_text()) for p in
               Path(project.path / "allure-results").glob("*-result.json")]
    checks = {r["name"]: r["status"] for r in results
              if {"name": "feature", "value": "gate"} in r["labels"]}
    assert checks == {"duplicate_rate[late_commit] ≤ 40.0%": "failed",
                      "eos_rate[none] ≥ 100.0%": "passed"}
    episodes = [r for r in results if {"name": "feature", "value": "gate"} not in r["labels"]]
    assert len(episodes) == 8 and {r["status"] for r in episodes} == {"passed"}


def test_the_verdict_and_the_family_table_go_to_the_github_step_summary(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (project.path / "gate.yaml").write_text(GATE.format(late=0.4))
    summary = project.path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    project.runpytest(*RUN)
    text = summary.read_text()
    assert text.startswith("earlier step\n"), "appended, as GitHub expects"
    assert "## Limbo gate `test_gate`: FAILED" in text
    assert "| ❌ | duplicate_rate[late_commit] ≤ 40.0% | 50.0% (1/2" in text
    assert "| ✅ | eos_rate[none] ≥ 100.0% |" in text
    assert "### Limbo summary" in text and "| late_commit | 2 | 2 |" in text
    summary.write_text("")
    project.runpytest(*RUN, "--limbo-step-summary=off")
    assert summary.read_text() == "", "turned off"
