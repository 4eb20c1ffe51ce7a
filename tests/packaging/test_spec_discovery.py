"""Which specs a run uses, and that Limbo stays out of runs that are not its own.

`--limbo-specs=DIR` alone decides the experiments; a directory without specs runs the specs that
come with Limbo once a Limbo option is given; another project's plain `pytest` is left exactly
as it would be without Limbo; a Limbo option that collects nothing says so in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from limbo_plugin.spec.registry import packaged_specs_dir

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
TWO = """\
name: default
templates: [incident_open]
instances: [0]
focal_writes: [ticket]
modes: [none, timeout_late]
"""


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.fixture
def other_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A specs directory whose only experiment, ``default``, has two episodes."""
    specs = tmp_path_factory.mktemp("elsewhere") / "specs"
    shutil.copytree(SPECS, specs)
    for experiment in (specs / "experiments").glob("*.yaml"):
        experiment.unlink()
    (specs / "experiments" / "default.yaml").write_text(TWO)
    return specs


def test_limbo_specs_alone_decides_which_experiments_run(project: pytest.Pytester,
                                                         other_specs: Path) -> None:
    # The project has its own specs (testpaths = specs, 785 default episodes); the option wins.
    records = project.path / "reports" / "episodes.jsonl"
    first = project.runpytest_subprocess(f"--limbo-specs={other_specs}", "-p", "no:randomly")
    first.assert_outcomes(passed=1, failed=1)
    assert {r["fault_mode"] for r in _lines(records)} == {"none", "timeout_late"}
    second = project.runpytest_subprocess(f"--limbo-specs={other_specs}", "-p", "no:randomly")
    second.assert_outcomes(passed=1, failed=1)
    assert len(_lines(records)) == 2, "the second run's records replace the first's"
    kept = list((project.path / "reports" / "history").glob("episodes.*.jsonl"))
    assert len(kept) == 1 and len(_lines(kept[0])) == 2, "the first run is kept in history/"


def test_limbo_specs_in_the_ini_file_decides_too(project: pytest.Pytester,
                                                 other_specs: Path) -> None:
    project.makeini(f"[pytest]\ntestpaths = specs\nlimbo_specs = {other_specs}\n"
                    "addopts = -p no:cacheprovider -p no:benchmark\n")
    project.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1, failed=1)


def test_named_paths_are_still_collected_as_given(project: pytest.Pytester,
                                                  other_specs: Path) -> None:
    result = project.runpytest_subprocess(
        f"--limbo-specs={other_specs}", str(other_specs / "experiments" / "default.yaml"),
        "--collect-only", "-q")
    assert re.search(r"^2 tests collected", result.stdout.str(), re.M), result.stdout.str()


def test_a_directory_without_specs_runs_the_packaged_ones(pytester: pytest.Pytester) -> None:
    assert (packaged_specs_dir() / "experiments" / "smoke.yaml").is_file()
    result = pytester.runpytest_subprocess("--experiment", "smoke", "-p", "no:cacheprovider",
                                           "-p", "no:randomly", "--tb=no", "-q")
    assert "Limbo summary" in result.stdout.str()
    outcomes = result.parseoutcomes()
    assert sum(outcomes.get(k, 0) for k in ("passed", "failed", "xfailed", "xpassed")) == 15
    assert len(_lines(pytester.path / "reports" / "episodes.jsonl")) == 15


UNRELATED = "def test_mine():\n    assert 1 + 1 == 2\n"


def _without_timing(text: str) -> str:
    """The output but for durations, the rules' widths (pytest centres a line holding the
    duration between runs of "=") and pytest's own list of installed plugins."""
    return re.sub(r" in [\d.]+s|^plugins: .*$|={2,}", "", text, flags=re.M)


def _pytest_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` run in ``directory`` as its user would (nothing inherited
    from this test run's own options)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly",
                           "-p", "no:benchmark", *args], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_another_projects_pytest_is_untouched(tmp_path: Path) -> None:
    (tmp_path / "test_mine.py").write_text(UNRELATED)
    before = _listing(tmp_path)
    plain = _pytest_in(tmp_path, "-p", "no:cacheprovider", "-p", "no:limbo")
    with_limbo = _pytest_in(tmp_path, "-p", "no:cacheprovider")
    assert with_limbo.returncode == 0, with_limbo.stdout
    assert _listing(tmp_path) == before, "no reports/ folder, no file"
    assert _without_timing(with_limbo.stdout) == _without_timing(plain.stdout)
    assert with_limbo.stderr == plain.stderr


def test_a_projects_experiments_folder_is_not_taken_for_limbos(pytester: pytest.Pytester
                                                               ) -> None:
    pytester.makepyfile(test_mine=UNRELATED)
    (pytester.path / "experiments").mkdir()
    (pytester.path / "experiments" / "default.yaml").write_text("learning_rate: 0.1\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


@pytest.mark.parametrize(("args", "why"), [
    (["--experiment", "smoke", "-k", "no_such_episode"], "-k/-m selected none of experiment "
                                                         "'smoke'"),
    (["--experiment", "smoke", "test_mine.py"], "the test paths of this run hold no Limbo "
                                                "experiment"),
])
def test_a_limbo_option_that_collects_nothing_says_why(pytester: pytest.Pytester,
                                                       args: list[str], why: str) -> None:
    pytester.makepyfile(test_mine=UNRELATED)
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider", "-p", "no:randomly")
    hints = [line for line in result.stdout.lines if line.startswith("limbo: ")]
    assert len(hints) == 1, result.stdout.str()
    assert hints[0].startswith("limbo: --experiment given but no Limbo episode was collected: "
                               + why)
    assert "pytest --experiment smoke" in hints[0]


@pytest.fixture
def below_a_project(tmp_path: Path) -> Path:
    """A Limbo project (its own specs, whose ``default`` experiment has two episodes; an ini
    whose ``testpaths`` point at them) and a subdirectory of it, ``notes/``, to run pytest in."""
    project = tmp_path / "study"
    shutil.copytree(SPECS, project / "specs")
    for experiment in (project / "specs" / "experiments").glob("*.yaml"):
        experiment.unlink()
    (project / "specs" / "experiments" / "default.yaml").write_text(TWO)
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = specs\n"
                                        "addopts = -p no:cacheprovider\n")
    (project / "notes").mkdir()
    return project / "notes"


@pytest.mark.parametrize("args", [[], ["--experiment", "default"], ["-k", "timeout_late"]],
                         ids=["bare", "limbo option", "-k"])
def test_a_run_below_the_rootdir_names_the_rootdir(below_a_project: Path,
                                                   args: list[str]) -> None:
    """pytest collects the subdirectory (testpaths apply only at the rootdir): exit 5, and one
    line naming the rootdir and the same command there, not "collected 0 items" alone nor the
    command that just failed."""
    project = below_a_project.parent
    result = _pytest_in(below_a_project, *args)
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout
    hints = [line for line in result.stdout.splitlines() if line.startswith("limbo: ")]
    given = ["-p", "no:randomly", "-p", "no:benchmark", *args]  # as _pytest_in runs it
    command = " ".join(["pytest", *given])
    assert hints == [
        "limbo: no Limbo episode was collected: pytest collects the directory it runs in "
        f"({below_a_project}), and this Limbo project's rootdir is {project}; run "
        f"`cd {project} && {command}`, or name its specs from here: "
        f"`{' '.join(['pytest', '../specs', *given])}`"]
    assert not (below_a_project / "reports").exists()
    # Both suggestions run the episodes.
    there = _pytest_in(project, *args, "--tb=no", "-q")
    here = _pytest_in(below_a_project, "../specs", *args, "--tb=no", "-q")
    expected = "1 failed" if args == ["-k", "timeout_late"] else "1 failed, 1 passed"
    assert expected in there.stdout and expected in here.stdout, (there.stdout, here.stdout)


def test_a_run_below_another_projects_rootdir_is_untouched(tmp_path: Path) -> None:
    """No Limbo specs at the rootdir: an empty subdirectory's run is pytest's own."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tmp_path / "test_mine.py").write_text(UNRELATED)
    (tmp_path / "notes").mkdir()
    result = _pytest_in(tmp_path / "notes")
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "limbo" not in result.stdout.lower().replace("limbo-bench", "")
