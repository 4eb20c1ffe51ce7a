"""The suite's two sets: `pytest tests` leaves the slow end-to-end tests out, `-m slow` runs
exactly them, and a plain `pytest` of the spec experiments loses no episode to the marker."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW_MODULE = "tests/report/test_report_browser.py"
"""A module whose every test is slow (it drives a headless browser)."""


def collect(*args: str) -> str:
    """The last line of ``pytest --collect-only -q`` run at the root as a user would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:randomly", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr[-2000:]
    return lines[-1]


def test_the_default_set_leaves_slow_tests_out_and_minus_m_slow_selects_them() -> None:
    default = collect(SLOW_MODULE)
    assert re.search(r"no tests collected \((\d+) deselected\)", default), default
    slow = collect(SLOW_MODULE, "-m", "slow")
    found = re.search(r"^(\d+) tests? collected", slow)
    assert found and int(found[1]) >= 4, slow


def test_a_plain_pytest_of_the_experiments_deselects_nothing() -> None:
    summary = collect()
    assert re.fullmatch(r"\d+ tests collected in [\d.]+s", summary), summary
