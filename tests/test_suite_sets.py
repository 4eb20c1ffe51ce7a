"""The suite's two sets: `pytest tests` leaves the slow end-to-end tests out, `-m slow` runs
exactly them, and a plain `pytest` of the spec experiments loses no episode to the marker; within
a set the long tests start first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOW_MODULE = "tests/report/test_report_browser.py"
"""A module whose every test is slow (it drives a headless browser)."""


def collected(*args: str) -> list[str]:
    """The lines of ``pytest --collect-only -q`` run at the root as a user would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:randomly", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, done.stderr[-2000:]
    return lines


def collect(*args: str) -> str:
    """The last line of ``pytest --collect-only -q``: how many tests it collected."""
    return collected(*args)[-1]


def test_the_default_set_leaves_slow_tests_out_and_minus_m_slow_selects_them() -> None:
    default = collect(SLOW_MODULE)
    assert re.search(r"no tests collected \((\d+) deselected\)", default), default
    # -m slow selects them; within the selection, tests/conftest.py moves the long ones
    # (``early``) ahead of the rest, so that under -n 2 they start first and overlap rather
    # than one running alone at the end
    plugin_runs, tutorial = "tests/harness/test_plugin_runs.py", "tests/test_tutorial.py"
    lines = collected(plugin_runs, SLOW_MODULE, tutorial, "-m", "slow")
    found = re.search(r"^(\d+)(?:/\d+)? tests? collected", lines[-1])
    ids = [line for line in lines if "::" in line]
    assert found and int(found[1]) == len(ids), lines[-1]
    browser = [i for i in ids if i.startswith(f"{SLOW_MODULE}::")]
    assert len(browser) >= 4, ids
    assert ids == [f"{plugin_runs}::test_a_production_harness_through_the_plugin",
                   f"{plugin_runs}::test_an_infrastructure_error_is_an_error_and_rerun_on_resume",
                   f"{tutorial}::test_the_tutorial_runs_as_written",
                   f"{plugin_runs}::test_pytest_k_lost_ack_with_the_mcp_agent", *browser]


def test_a_plain_pytest_of_the_experiments_deselects_nothing() -> None:
    summary = collect()
    assert re.fullmatch(r"\d+ tests collected in [\d.]+s", summary), summary

