"""What the README states about running Limbo is what Limbo does: its example family table is
the table a bare run prints, every pytest option and every ``limbo`` subcommand is documented,
the exit statuses are pytest's, and the files its Reliability section names exist."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from limbo_plugin.cli import build_parser
from limbo_plugin.plugin.options import OPTIONS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_example_family_table_is_what_a_bare_run_prints(pytester: pytest.Pytester) -> None:
    shutil.copytree(ROOT / "specs", pytester.path / "specs")
    pytester.makeini("[pytest]\ntestpaths = specs\naddopts = -p no:cacheprovider\n")
    result = pytester.runpytest_subprocess("--tb=no", "-rN", "-q")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # as the README says: 1, the measurement
    printed = result.stdout.str()
    shown = _section("Reading the results").split("```\n", 2)[1]
    table = [line for line in shown.splitlines() if line.strip()]
    assert len(table) > 5
    for line in table:
        assert line in printed, line
    counts = re.search(r"(\d+) failed, (\d+) passed, (\d+) xfailed in", printed)
    assert counts is not None
    total = sum(int(n) for n in counts.groups())
    assert f"{total} episodes with the default agent" in _section("Running episodes")


def test_every_pytest_option_and_limbo_subcommand_is_documented() -> None:
    for opt in OPTIONS:
        assert f"`{opt.flag}" in README, opt.flag
    parser = build_parser()
    (commands,) = [a for a in parser._actions if a.dest == "command"]
    for name in commands.choices:  # type: ignore[union-attr]
        assert f"limbo {name}" in README, name
    assert "limbo --version" in README


def test_no_stale_or_unrunnable_lines() -> None:
    assert "SPEC §" not in README and "episodes.previous" not in README
    assert not re.search(r"^limbo .*\w \| \w", README, flags=re.MULTILINE), \
        "a `a | b` alternative in a shell line is a pipe"


def test_exit_statuses_are_pytests() -> None:
    section = _section("Running episodes").split("### Exit status", 1)[1]
    documented = {int(n) for n in re.findall(r"^\| (\d) \|", section, flags=re.MULTILINE)}
    # Every code the installed pytest has is explained, and nothing else (6 arrived in 9.2).
    assert {int(code) for code in pytest.ExitCode} <= documented <= set(range(7))
    assert f"| {int(pytest.ExitCode.USAGE_ERROR)} | a usage error" in section
    assert f"| {int(pytest.ExitCode.TESTS_FAILED)} | at least one episode **failed**" in section


def test_the_reliability_section_names_real_test_files() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)`", _section("Reliability"))
    assert len(named) >= 10
    assert [path for path in named if not (ROOT / path).is_file()] == []
