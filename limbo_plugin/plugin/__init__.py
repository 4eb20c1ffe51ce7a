"""pytest plugin (entry point ``pytest11``): the hooks, wiring the modules beside it.

A bare ``pytest`` collects the experiment named by ``--experiment`` (default ``default``) from
``specs/experiments/`` into one item per episode; ``pytest tests`` runs the project's own suite.
Under pytest-xdist each worker runs its items and hands each record over on its report; the
controller alone appends records to the JSONL file, aggregates, prints the summary and applies
the gate.

- :mod:`.options`: the option table (``--agent``, ``--limbo-records``, …);
- :mod:`.settings`: what the session was asked to do, and its state;
- :mod:`.items`: collection, one item per episode;
- :mod:`.controller`: the controller's side (checks before the run, records, gate);
- :mod:`.terminal`: what the controller prints.
"""

from __future__ import annotations

import gc
import signal
from collections.abc import Generator
from pathlib import Path

import pytest

from limbo_plugin.errors import LimboError
from limbo_plugin.plugin.controller import (
    LimboController,
    RunIdToWorkers,
    prepare_controller,
    sync_on_sigterm,
)
from limbo_plugin.plugin.items import (
    EpisodeFailure,
    EpisodeItem,
    ExperimentFile,
    InfrastructureFailure,
    SpecErrorPolicy,
    keep_shard,
)
from limbo_plugin.plugin.options import add_options, check_rootdir, option
from limbo_plugin.plugin.settings import STATE, LimboState


# -- options -------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    try:
        check_rootdir(config)
        state = LimboState(config)
        if state.active and not state.is_worker:
            prepare_controller(config, state)
        elif state.active and state.resume:
            from limbo_plugin.report.outcomes import read_outcomes

            state.remember_done(read_outcomes(state.records_path))
    except (LimboError, OSError) as exc:
        # One line naming the option and what would be valid, before any episode runs.
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = state
    config.pluginmanager.register(SpecErrorPolicy(), "limbo-spec-errors")
    if state.only_specs:
        lean_spec_run(config)
    if not state.active:
        return
    from limbo_plugin.plugin.scrub_reports import ScrubbedReports
    from limbo_plugin.plugin.worker_watch import watch_workers

    config.pluginmanager.register(ScrubbedReports(), "limbo-scrub-reports")
    watch_workers(config, state.records_path, state.episode_timeout)
    if not state.is_worker:
        from limbo_plugin.report.record_files import RecordWriter

        state.writer = RecordWriter(state.records_path)
        config.pluginmanager.register(LimboController(state), "limbo-controller")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(RunIdToWorkers(state.run_id), "limbo-run-id")
        sync_on_sigterm(state)
        from limbo_plugin.report import progress

        progress.install(config, state.outcomes, option(config, "limbo_progress"),
                         state.cost_limit, lambda: state.family_order)
    if state.cost_limit is not None:
        from limbo_plugin.report.record_files import CostMeter

        state.cost_meter = CostMeter(state.records_path)


UNUSED_IN_SPEC_RUNS = ("hypothesispytest",)
"""Plugins with nothing to do where only episodes run. Hypothesis' imports all of Hypothesis in
its terminal summary (0.3-2 s a run), whether or not a test used it."""


def lean_spec_run(config: pytest.Config) -> None:
    """In a run of episodes only: unregister :data:`UNUSED_IN_SPEC_RUNS`."""
    manager = config.pluginmanager
    for name in UNUSED_IN_SPEC_RUNS:
        plugin = manager.get_plugin(name)
        if plugin is not None:
            manager.unregister(plugin=plugin, name=name)


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE, None)
    if state is not None and state.only_specs:
        # Everything collected lives to the end of the session: leave it out of the cyclic
        # collector's full passes, which otherwise re-scan every item after each few episodes.
        gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.writer is not None:
        state.writer.close()
        if state.rotated_to is not None and state.writer.written == 0:
            from limbo_plugin.report.record_files import unrotate

            unrotate(state.records_path, state.rotated_to)
    if state.records_lock is not None:
        state.records_lock.release()
    if (state.sigterm_handler is not None
            and signal.getsignal(signal.SIGTERM) is state.sigterm_handler):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- collection ----------------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    state = config.stash.get(STATE, None)
    if state is None or not state.active or file_path.suffix not in (".yaml", ".yml"):
        return None
    if file_path.parent.name != "experiments":
        return None
    named = any(Path(arg.split("::")[0]).resolve() == file_path.resolve()
                for arg in config.args if arg.endswith((".yaml", ".yml")) or "::" in arg)
    if not named and file_path.stem != state.experiment:
        return None
    return ExperimentFile.from_parent(parent, path=file_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """An episode's failure or infrastructure error is its message, in every phase: pytest
    would show the plugin's own source lines for an error raised in setup. The report that
    shows the episode's outcome also carries its record line to the controller
    (:meth:`EpisodeItem.hand_over`; see :data:`RECORD_ATTRIBUTE`)."""
    report = yield
    if isinstance(item, EpisodeItem) and (call.when != "setup" or not report.passed):
        item.hand_over(report)
    excinfo = call.excinfo
    if isinstance(item, EpisodeItem) and excinfo is not None and isinstance(
            excinfo.value, EpisodeFailure | InfrastructureFailure | LimboError):
        report.longrepr = str(excinfo.value)
    return report


# -- reporting (controller only) -----------------------------------------------------------------
@pytest.hookimpl(trylast=True)  # after -k and -m: a shard is a share of what was selected
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.shard is not None:
        keep_shard(config, state, items)
    state.selected = {(i.episode.key.id, i.episode.config.fingerprint(), i.episode.repeat)
                      for i in items
                      if isinstance(i, EpisodeItem)}


