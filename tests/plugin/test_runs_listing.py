"""``limbo runs`` tells runs apart: each run's agent and non-default configuration, how it
selected its episodes (``-k``, ``--experiment``…), and its counts."""

from __future__ import annotations

import pytest

from limbo_plugin.cli import main


def test_each_run_shows_its_configuration_and_selection(project: pytest.Pytester,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    project.runpytest("--experiment", "small", "-k", "incident_open")
    project.runpytest("--experiment", "small", "-k", "incident_open", "--condition", "guard")
    project.runpytest("--experiment", "small", "--contract", "keys_everywhere",
                      "--model-option", "api_key=sk-do-not-log")
    capsys.readouterr()
    assert main(["runs", str(project.path / "reports" / "episodes.jsonl")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ["configuration", "selection"]
    newest, guard, vanilla = lines[2:5]
    assert "scripted:verify_first, contract=keys_everywhere" in newest
    assert newest.rstrip().endswith("--experiment small")
    assert " 8 " in newest
    assert "scripted:verify_first, condition=guard" in guard
    assert guard.rstrip().endswith("--experiment small -k incident_open")
    assert "condition=" not in vanilla and "contract=" not in vanilla
    assert "scripted:verify_first" in vanilla and " 4 " in vanilla
    log = (project.path / "reports" / "episodes.runs.log").read_text()
    assert "sk-do-not-log" not in log and "api_key" not in log


def test_gate_baseline_previous_without_an_earlier_run_says_where_it_looked(
        project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    project.runpytest("--experiment", "small", "-k", "incident_open")
    project.runpytest("--experiment", "small", "-k", "incident_open",
                      "--limbo-records=reports/other.jsonl")
    project.runpytest("--experiment", "small", "-k", "incident_open",
                      "--limbo-records=reports/other.jsonl")
    history = project.path / "reports" / "history"
    assert history.is_dir(), "history/ exists, with another file's run in it"
    capsys.readouterr()
    status = main(["--specs", str(project.path / "specs"), "gate",
                   str(project.path / "specs" / "gates" / "release.yaml"), "--records",
                   str(project.path / "reports" / "episodes.jsonl"), "--baseline", "previous"])
    assert status == 2
    err = capsys.readouterr().err
    assert "has no history/ beside it" not in err
    assert f"no earlier run of {project.path / 'reports' / 'episodes.jsonl'} in {history}/" \
        in err
