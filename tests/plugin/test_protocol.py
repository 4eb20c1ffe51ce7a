"""The episode's run protocol (:mod:`limbo_plugin.plugin.protocol`) against pytest's own: the
same reports, phase for phase (outcome, message, captured output and logs, xfail, skip marks,
``-x``), the same records; and it stands aside when a plugin it does not know hooks a phase."""

from __future__ import annotations

import json

import pytest

DUMP = """
import json
import logging
from pathlib import Path

import pytest

import limbo_plugin.episode as episode_module

reports = []
real_run_episode = episode_module.run_episode


def run_episode(key, *args, **kwargs):
    # The episode's own output and log records: they must land in its report's sections.
    print(f"episode {key.id} says hello")
    logging.getLogger("limbo.test").warning("episode %s logs", key.id)
    return real_run_episode(key, *args, **kwargs)


episode_module.run_episode = run_episode


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.endswith("redelivery") and "-i0-" in item.name:
            item.add_marker(pytest.mark.skip(reason="skipped by the project"))
        if item.name == "invoice_batch-i0-charge_1-timeout_late":
            item.add_marker(pytest.mark.xfail(reason="expected by the project"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    reports.append({
        "nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
        "longrepr": None if report.longrepr is None else str(report.longrepr),
        "wasxfail": getattr(report, "wasxfail", None),
        "sections": [[title, text] for title, text in report.sections],
        "user_properties": [list(p) for p in report.user_properties],
        "keywords": sorted(report.keywords),
        "location": list(report.location)})


def pytest_unconfigure(config):
    episode_module.run_episode = real_run_episode  # pytester runs in this process


def pytest_sessionfinish(session):
    protocol = session.config.pluginmanager.get_plugin("limbo-episode-protocol")
    Path("dump.json").write_text(json.dumps({
        "reports": reports, "protocol": None if protocol is None else protocol.enabled}))
"""

FOREIGN_PHASE_HOOK = """

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield)
"""


def run(project: pytest.Pytester, *args: str, foreign: bool = False
        ) -> tuple[dict, pytest.RunResult, list[str]]:
    project.makeconftest(DUMP + (FOREIGN_PHASE_HOOK if foreign else ""))
    result = project.runpytest("--experiment", "small", "-p", "no:randomly", *args)
    dump = json.loads((project.path / "dump.json").read_text())
    records = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    return dump, result, [strip_run(line) for line in records]


def strip_run(line: str) -> str:
    record = json.loads(line)
    record.pop("run_id")
    return json.dumps(record, sort_keys=True)


def test_an_episode_reports_as_under_pytests_protocol(project: pytest.Pytester) -> None:
    ours, our_result, our_records = run(project)
    (project.path / "reports" / "episodes.jsonl").unlink()
    theirs, their_result, their_records = run(project, foreign=True)
    assert ours["protocol"] is True, "the episode protocol ran the episodes"
    assert theirs["protocol"] is False, "a foreign phase hook hands the episodes to pytest"
    assert ours["reports"] == theirs["reports"]
    assert our_records == their_records
    assert our_result.parseoutcomes() == their_result.parseoutcomes()
    reports = ours["reports"]
    # What the comparison covers: every phase, a skip mark, an expected failure, a failure,
    # the episode's output and log records in its setup section, a record per episode run.
    assert {r["when"] for r in reports} == {"setup", "call", "teardown"}
    assert any(r["outcome"] == "skipped" and "skipped by the project" in (r["longrepr"] or "")
               for r in reports)
    assert any(r["wasxfail"] == "expected by the project" for r in reports)
    assert any(r["outcome"] == "failed" and "duplicated" in (r["longrepr"] or "")
               for r in reports)
    said = [text for r in reports for title, text in r["sections"]
            if title == "Captured stdout setup"]
    assert any("says hello" in text for text in said)
    logged = [text for r in reports for title, text in r["sections"]
              if title == "Captured log setup"]
    assert any("logs" in text for text in logged)
    ran = {r["nodeid"] for r in reports if r["when"] == "call"}
    assert len(ran) == len(our_records) == 6


def test_exitfirst_stops_at_the_same_episode(project: pytest.Pytester) -> None:
    ours, _, our_records = run(project, "-x")
    (project.path / "reports" / "episodes.jsonl").unlink()
    theirs, _, their_records = run(project, "-x", foreign=True)
    assert ours["protocol"] is True and theirs["protocol"] is False
    assert ours["reports"] == theirs["reports"]
    assert our_records == their_records
    assert len(our_records) < 8, "-x stopped the run at the first failure"


def test_the_protocol_stands_aside_for_allure(project: pytest.Pytester) -> None:
    dump, _, records = run(project, f"--alluredir={project.path / 'allure'}")
    assert dump["protocol"] is False, "Allure hooks each phase: pytest's protocol runs"
    assert len(records) == 6, "two episodes carry a skip mark"
    results = list((project.path / "allure").glob("*-result.json"))
    assert len(results) == 8
    assert all(json.loads(path.read_text())["status"] in ("passed", "failed", "skipped")
               for path in results)
