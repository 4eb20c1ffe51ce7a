"""The gate's checks as test results, so that what CI shows is the gate.

With ``--limbo-gate`` an episode is a measurement: its item passes whatever the agent did
(its verdict travels as the ``limbo_verdict`` property, in JUnit too), and the gate's checks are
the tests. They are judged at the end of the run, on the controller, from every episode's
record, so they cannot be collected as items (under pytest-xdist a worker sees its own episodes
only); the controller reports each check as pytest-xdist reports a worker's test, through
``pytest_runtest_logstart``/``logreport``: the terminal counts it, ``--junitxml`` writes it as
a test case (a failed check is a ``<failure>`` with its detail), and with ``--alluredir`` it is
an Allure result of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

if TYPE_CHECKING:
    from limbo_plugin.report.gate import Check, GateResult

VERDICT_PROPERTY = "limbo_verdict"
"""The user property that carries an episode's verdict (``passed``, ``failed``, ``expected
failure``) when the gate decides the run."""
FAILURE_PROPERTY = "limbo_failure"
"""The user property that carries why an episode failed, beside its verdict."""


def gate_node(config: pytest.Config, gate_path: Path) -> str:
    """The node-id prefix of the gate's checks: the gate spec's path from the rootdir."""
    try:
        return Path(gate_path).resolve().relative_to(Path(str(config.rootpath))).as_posix()
    except ValueError:
        return Path(gate_path).name


def report_checks(session: pytest.Session, gate_path: Path, result: GateResult) -> None:
    """One test result per check of ``result`` (its setup, call and teardown reports)."""
    config = session.config
    prefix = gate_node(config, gate_path)
    # Counted with the collected tests (the terminal's progress stays within 100%), and on a
    # line of their own after the episodes' progress, which is complete.
    session.testscollected += len(result.checks)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.currentfspath = None
    for check in result.checks:
        nodeid = f"{prefix}::{check.name}"
        location = (prefix, None, f"gate {result.gate!r}: {check.name}")
        config.hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        outcome: Literal["passed", "failed"] = "passed" if check.passed else "failed"
        properties = [("limbo_gate", result.gate), ("limbo_judged", str(check.judged).lower()),
                      ("limbo_detail", check.detail)]
        phases: tuple[Literal["setup", "call", "teardown"], ...] = ("setup", "call", "teardown")
        for phase in phases:
            when = phase
            failed_here = when == "call" and not check.passed
            report = pytest.TestReport(
                nodeid, location, {"limbo_gate": 1}, outcome if when == "call" else "passed",
                f"{check.name}: {check.detail}" if failed_here else None, phase,
                user_properties=properties)
            config.hook.pytest_runtest_logreport(report=report)
        allure_result(config, result.gate, check)


def allure_result(config: pytest.Config, gate: str, check: Check) -> None:
    """With ``--alluredir``, the check as an Allure test result of its own."""
    from limbo_plugin.report import allure as allure_report

    if allure_report.enabled(config):
        allure_report.gate_check(gate, check.name, check.passed, check.detail)
