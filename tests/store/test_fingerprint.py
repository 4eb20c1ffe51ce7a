"""A resumed run continues a records file only with the specs and model options its episodes
were made with: an edited template or fault mode, or another ``--model-option`` value, is
refused in one line naming what changed, before any episode runs."""

from __future__ import annotations

import json

import pytest

SELECT = ["--experiment", "small", "--agent", "scripted:verify_first", "-k"]
ONE = "incident_open and timeout_post"
TWO = "incident_open and (lost_ack or late_commit)"


def _records(project: pytest.Pytester) -> list[str]:
    path = project.path / "reports" / "episodes.jsonl"
    return [json.loads(line)["test_id"] for line in path.read_text().splitlines()]


def test_a_resume_with_an_edited_template_is_refused(project: pytest.Pytester) -> None:
    project.runpytest_subprocess(*SELECT, ONE).assert_outcomes(passed=1)
    assert (project.path / "reports" / "episodes.fingerprint.json").is_file()
    template = project.path / "specs" / "tasks" / "incident_open.yaml"
    template.write_text(template.read_text().replace("description:", "description: Edited.",
                                                       1))
    refused = project.runpytest_subprocess(*SELECT, TWO, "--limbo-resume")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    line = refused.stderr.str().strip().splitlines()[-1]
    assert "was recorded with other specs or options (specs/tasks/incident_open.yaml " \
           "changed)" in line, line
    assert len(_records(project)) == 1  # nothing appended


def test_a_resume_with_another_model_option_is_refused_and_the_same_one_goes_on(
        project: pytest.Pytester) -> None:
    first = project.runpytest_subprocess(*SELECT, ONE, "--model-option",
                                         "temperature=0.2")
    first.assert_outcomes(passed=1)
    refused = project.runpytest_subprocess(*SELECT, TWO, "--limbo-resume", "--model-option",
                                           "temperature=0.7")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "--model-option temperature changed" in refused.stderr.str()
    assert "0.7" not in refused.stderr.str().splitlines()[-1]  # values are not shown
    again = project.runpytest_subprocess(*SELECT, TWO, "--limbo-resume", "--model-option",
                                         "temperature=0.2")
    # not refused: it runs the late commit (which verify_first duplicates: a failed episode)
    assert again.ret == pytest.ExitCode.TESTS_FAILED, again.stderr.str()[-2000:]
    assert len(_records(project)) == len(set(_records(project))) > 1


def test_a_fresh_run_moves_the_fingerprint_with_its_file(project: pytest.Pytester) -> None:
    project.runpytest_subprocess(*SELECT, ONE).assert_outcomes(passed=1)
    project.runpytest_subprocess(*SELECT, ONE).assert_outcomes(passed=1)
    history = sorted((project.path / "reports" / "history").iterdir())
    names = sorted(p.name for p in history)
    assert any(n.endswith(".jsonl") for n in names)
    assert any(n.endswith(".fingerprint.json") for n in names), names
