"""What pytest shows and Allure attaches of an episode carries no secret Limbo knows.

An episode's record is scrubbed where it is made (:mod:`limbo_plugin.scrubbing`); what pytest
itself keeps of a test is not: the output captured while the agent ran (a library that logs its
request, an agent that prints its key) and the failure's text. Both ride on the test report,
which the terminal prints, pytest-xdist sends to the controller and allure-pytest attaches
(``stdout``, ``stderr``, ``log``, the status trace). This hook scrubs them on the report as it
is made, before any of those read it. A warning an agent raises (``warnings.warn(f"… {key}")``)
takes another road — pytest's warnings summary, which pytest-xdist forwards from the workers —
so each warning is scrubbed as it is recorded, before the terminal or a worker reads it.
"""

from __future__ import annotations

import warnings
from collections.abc import Generator

import pytest

from limbo_plugin.scrubbing import current


class ScrubbedReports:
    """Registered by the plugin in every process that runs tests."""

    @pytest.hookimpl(wrapper=True, trylast=True)  # innermost: before allure-pytest reads it
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        scrub_report(report)
        return report

    @pytest.hookimpl(tryfirst=True)  # before the terminal and pytest-xdist read it
    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage, when: str,
                                nodeid: str, location: tuple[str, int, str] | None) -> None:
        scrub_warning(warning_message)


def scrub_warning(warning_message: warnings.WarningMessage) -> None:
    """Replace every known secret in a recorded warning's message, keeping its category."""
    scrubber = current()
    text = str(warning_message.message)
    if not scrubber or not scrubber.found_in(text):
        return
    category = warning_message.category
    try:
        warning_message.message = category(scrubber.text(text))
    except Exception:  # a category that takes other arguments: a plain warning says it
        warning_message.message = UserWarning(f"{category.__name__}: {scrubber.text(text)}")


def scrub_report(report: pytest.TestReport) -> None:
    """Replace every known secret in the report's captured output and failure text."""
    scrubber = current()
    if not scrubber:
        return
    report.sections = [(title, scrubber.text(content)) for title, content in report.sections]
    longrepr = report.longrepr
    if longrepr is None:
        return
    if isinstance(longrepr, tuple):  # a skip: (file, line, reason)
        path, line, reason = longrepr
        report.longrepr = (path, line, scrubber.text(reason))
        return
    text = longrepr if isinstance(longrepr, str) else str(longrepr)
    if scrubber.found_in(text):
        report.longrepr = scrubber.text(text)
