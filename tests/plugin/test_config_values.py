"""Values that pytest or a shell hands over in a form Limbo does not take — a truth value pytest
cannot read, a TOML number where pytest takes text, a condition with a newline or a wait past
any simulated clock — are one usage line before any episode, never an INTERNALERROR."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

SPECS = Path(__file__).resolve().parents[2] / "specs"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(SPECS, pytester.path / "specs")
    return pytester


def _usage_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output and "Traceback" not in output, output[-2000:]
    (line,) = [x for x in result.stderr.str().splitlines() if x.startswith("ERROR: ")]
    return line


def test_a_truth_value_pytest_cannot_read(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntestpaths = specs\nlimbo_resume = maybe\n")
    line = _usage_line(project.runpytest_subprocess("--experiment", "smoke"))
    assert line == (f"ERROR: {project.path / 'tox.ini'}: limbo_resume: invalid truth value "
                    "'maybe'; it takes true or false")
    assert not (project.path / "reports").exists()


@pytest.mark.parametrize(("setting", "says"), [
    ("limbo_progress = 5", "config option 'limbo_progress' expects a string, got int: 5; it "
                           'takes text: quote it in TOML (name = "value")'),
    ('limbo_resume = "maybe"', "config option 'limbo_resume' expects a bool, got str: 'maybe'; "
                               "it takes true or false"),
])
def test_a_native_toml_value_of_the_wrong_type(project: pytest.Pytester, setting: str,
                                               says: str) -> None:
    project.makepyprojecttoml(f'[tool.pytest]\ntestpaths = ["specs"]\n{setting}\n')
    line = _usage_line(project.runpytest_subprocess("--experiment", "smoke"))
    name = setting.split(" ")[0]
    assert line == f"ERROR: {project.path / 'pyproject.toml'}: {name}: {says}"


@pytest.mark.parametrize(("condition", "says"), [
    ("wait_" + "1" * 20, "the wait is at most 2592000 s (30 days)"),
    ("wait_60\n", "unknown condition 'wait_60\\n'"),
])
def test_a_condition_past_any_clock_or_with_a_newline(project: pytest.Pytester, condition: str,
                                                      says: str) -> None:
    project.makeini("[pytest]\ntestpaths = specs\n")
    line = _usage_line(project.runpytest_subprocess("--experiment", "smoke", "--condition",
                                                    condition))
    assert says in line


def test_an_empty_experiment_name_is_not_the_default_experiment(
        project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntestpaths = specs\n")
    line = _usage_line(project.runpytest_subprocess("--experiment", ""))
    assert line.startswith("ERROR: --experiment '': name an experiment")
    assert not (project.path / "reports").exists()
