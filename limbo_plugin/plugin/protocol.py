"""The run protocol of an episode item: one pass through its three phases instead of pytest's
three rounds of hooks.

pytest runs every item as three phases, and each phase is a round of hooks
(``pytest_runtest_setup``/``call``/``teardown``) that the capture, logging, skipping and
exception-collecting plugins wrap; about a third of the CPU pytest and Limbo spend per episode
went to that machinery, for an item whose call phase only compares its record and whose teardown
has no fixture to finalise. For an episode item, :class:`EpisodeProtocol` does what those phase
hooks would do, directly:

- the skip and xfail marks are evaluated as ``_pytest.skipping`` evaluates them;
- the episode (which runs in setup, :meth:`~limbo_plugin.plugin.items.EpisodeItem.setup`) runs
  under the item's output capture and log capture, so its output is a "Captured … setup"
  section of its report, as before;
- the collectors' setup and teardown go through the session's ``SetupState``, as pytest's;
- every report a user or another plugin relies on is still made and logged: a setup, call and
  teardown report through ``pytest_runtest_makereport`` and ``pytest_runtest_logreport``
  (the terminal, ``-x``, ``--lf``, junitxml, pytest-xdist's workers), with
  ``pytest_runtest_logstart``/``logfinish`` around them and ``pytest_exception_interact``
  for ``--pdb``.

It stands aside (pytest's own protocol runs the item) whenever a plugin it does not know hooks
a phase, since only pytest's protocol would call that plugin: Allure (``--alluredir``), which
records each phase, is the common case, and ``--setup-show``/``--setup-only``/``--setup-plan``,
which print or skip phases. Items other than episodes always go through pytest's protocol.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest
from _pytest.logging import caplog_handler_key, caplog_records_key
from _pytest.runner import (
    CallInfo,
    _update_current_test_var,
    check_interactive_exception,
    get_reraise_exceptions,
)
from _pytest.skipping import evaluate_skip_marks, evaluate_xfail_marks, xfailed_key
from _pytest.threadexception import collect_thread_exception
from _pytest.unraisableexception import collect_unraisable

from limbo_plugin.plugin.items import EpisodeItem

PHASE_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")

KNOWN_PHASE_PLUGINS = frozenset({
    "runner",  # the collectors' setup state and PYTEST_CURRENT_TEST: done here
    "skipping",  # skip and xfail marks: evaluated here
    "capturemanager",  # the item's output capture: here, around the episode
    "logging-plugin",  # the item's log capture: here, around the episode
    "threadexception",  # collects what threads raised: collected here once per item
    "unraisableexception",  # the same for unraisable exceptions
    "benchmark",  # pytest-benchmark's setup checks its own mark, which no episode has
})
"""The plugins whose phase hooks this protocol stands in for (pluggy's plugin names)."""

PHASE_OPTIONS = ("setupshow", "setuponly", "setupplan")
"""pytest options that show or skip phases: with any of them, pytest's own protocol runs."""

Phase = Literal["setup", "call", "teardown"]


def foreign_phase_plugins(config: pytest.Config) -> list[str]:
    """The plugins hooking a phase that this protocol would not call (pytest's protocol runs
    episodes while there is one)."""
    names: dict[str, None] = {}
    for hook in PHASE_HOOKS:
        for impl in getattr(config.pluginmanager.hook, hook).get_hookimpls():
            if impl.plugin_name not in KNOWN_PHASE_PLUGINS:
                names[impl.plugin_name] = None
    return list(names)


class EpisodeProtocol:
    """``pytest_runtest_protocol`` for episode items (see the module's docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.enabled: bool | None = None
        """Decided at the first episode, when every plugin has registered."""
        self.capture: Any = None
        self.logging: Any = None
        self.reraise: tuple[type[BaseException], ...] = ()

    def decide(self) -> bool:
        config = self.config
        manager = config.pluginmanager
        self.capture = manager.get_plugin("capturemanager")
        self.logging = manager.get_plugin("logging-plugin")
        self.reraise = get_reraise_exceptions(config)
        logging_usable = self.logging is None or (
            hasattr(self.logging, "_runtest_for") and hasattr(self.logging, "log_cli_handler"))
        return (not foreign_phase_plugins(config) and logging_usable
                and not any(config.getoption(name, False) for name in PHASE_OPTIONS))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None
                                ) -> bool | None:
        if type(item) is not EpisodeItem:
            return None
        if self.enabled is None:
            self.enabled = self.decide()
        if not self.enabled:
            return None
        ihook = item.ihook
        ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        self.run(item, nextitem)
        ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    def run(self, item: EpisodeItem, nextitem: pytest.Item | None) -> None:
        """The three phases, each one report, as pytest's ``runtestprotocol``."""
        try:
            if self.report(item, "setup", lambda: self.setup(item)).passed:
                self.report(item, "call", lambda: self.call(item))
            session = item.session
            if session.shouldfail or session.shouldstop:
                nextitem = None  # tear everything down, as pytest does (pytest-dev/pytest#11706)
            self.report(item, "teardown", lambda: self.teardown(item, nextitem))
        finally:
            if self.logging is not None:
                if caplog_records_key in item.stash:
                    del item.stash[caplog_records_key]
                if caplog_handler_key in item.stash:
                    del item.stash[caplog_handler_key]

    def report(self, item: EpisodeItem, when: Phase, body: Callable[[], None]
               ) -> pytest.TestReport:
        call = CallInfo.from_call(body, when=when, reraise=self.reraise)
        ihook = item.ihook
        report: pytest.TestReport = ihook.pytest_runtest_makereport(item=item, call=call)
        ihook.pytest_runtest_logreport(report=report)
        if check_interactive_exception(call, report):
            ihook.pytest_exception_interact(node=item, call=call, report=report)
        return report

    def setup(self, item: EpisodeItem) -> None:
        config = self.config
        _update_current_test_var(item, "setup")
        skipped = evaluate_skip_marks(item)
        if skipped:
            raise pytest.skip.Exception(skipped.reason, _use_item_location=True)
        item.stash[xfailed_key] = xfailed = evaluate_xfail_marks(item)
        if xfailed and not config.option.runxfail and not xfailed.run:
            pytest.xfail("[NOTRUN] " + xfailed.reason)
        with self.captured(item):
            item.session._setupstate.setup(item)
        collect_thread_errors(config)

    @contextlib.contextmanager
    def captured(self, item: EpisodeItem) -> Iterator[None]:
        """The episode's output and log records, as its setup phase's report sections."""
        with contextlib.ExitStack() as stack:  # nested as pytest nests the two plugins
            if self.logging is not None:
                self.logging.log_cli_handler.set_when("setup")
                item.stash[caplog_records_key] = {}
                stack.enter_context(self.logging._runtest_for(item, "setup"))
            if self.capture is not None:
                stack.enter_context(self.capture.item_capture("setup", item))
            yield

    def call(self, item: EpisodeItem) -> None:
        _update_current_test_var(item, "call")
        try:
            item.runtest()
        except Exception as exc:  # for post-mortem debugging, as pytest keeps it
            sys.last_type, sys.last_value = type(exc), exc
            sys.last_traceback = exc.__traceback__
            raise

    def teardown(self, item: EpisodeItem, nextitem: pytest.Item | None) -> None:
        _update_current_test_var(item, "teardown")
        item.session._setupstate.teardown_exact(nextitem)
        _update_current_test_var(item, None)


def collect_thread_errors(config: pytest.Config) -> None:
    """What threads raised and what could not be raised, reported as pytest's plugins do once
    per phase (here once per episode)."""
    manager = config.pluginmanager
    if manager.has_plugin("threadexception"):
        collect_thread_exception(config)
    if manager.has_plugin("unraisableexception"):
        collect_unraisable(config)
