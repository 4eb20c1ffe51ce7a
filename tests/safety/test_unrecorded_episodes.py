"""An episode that started and left no record (its agent raised something no episode catches,
ended its process, or took its worker down) is named at the end of the run, is not in the
rates, and ``--limbo-resume`` runs it again."""

from __future__ import annotations

import json

import pytest

AGENT = """\
import os


class Escapes(BaseException):
    '''Not an Exception: nothing between the agent and pytest catches it as the agent's bug.'''


class Agent:
    name = "escapes"

    def run(self, session):
        marker = os.environ["LIMBO_TEST_ESCAPED"]
        if not os.path.exists(marker):  # the run's first episode, once
            open(marker, "w").close()
            raise Escapes("out of the episode")
        session.call("finish", {"status": "completed", "summary": "done",
                                "uncertain_operations": []})
"""


def test_an_episode_without_a_record_is_named_and_run_again_on_resume(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (project.path / "escaping_agent.py").write_text(AGENT)
    select = ["--experiment", "small", "-k", "incident_open and (lost_ack or late_commit)",
              "--agent", "python:escaping_agent:Agent"]
    monkeypatch.setenv("LIMBO_TEST_ESCAPED", str(project.path / "escaped"))
    first = project.runpytest_subprocess(*select)
    output = first.stdout.str()
    records = project.path / "reports" / "episodes.jsonl"
    kept = [json.loads(line)["test_id"] for line in records.read_text().splitlines()]
    assert len(kept) == 1, kept
    line = next(line for line in output.splitlines() if "left no record" in line)
    assert line.startswith("limbo: 1 episode(s) started but left no record ("), line
    missing = line.split("record (", 1)[1].split(")", 1)[0]
    assert missing not in kept and missing.startswith("incident_open-i0-"), (missing, kept)
    again = project.runpytest_subprocess(*select, "--limbo-resume")
    kept = [json.loads(line)["test_id"] for line in records.read_text().splitlines()]
    assert sorted(kept) == sorted({*kept, missing}) and len(kept) == 2, kept
    assert "left no record" not in again.stdout.str()


def test_a_test_module_in_a_folder_named_experiments_is_no_episode(
        project: pytest.Pytester) -> None:
    """Only an experiment spec's items are episodes: a project's own tests kept in a folder
    named ``experiments`` run beside the episodes without being counted as unrecorded ones."""
    folder = project.path / "experiments"
    folder.mkdir()
    (folder / "test_design.py").write_text("def test_design():\n    assert True\n")
    result = project.runpytest("--experiment", "small", "specs", "experiments")
    result.assert_outcomes(passed=5, failed=3, xfailed=1)
    assert "left no record" not in result.stdout.str()
