"""pytest plugin (entry point ``pytest11``): the hooks, wiring the modules beside it.

A bare ``pytest`` collects the experiment named by ``--experiment`` (default ``default``) from
``specs/experiments/`` into one item per episode; ``pytest tests`` runs the project's own suite.
Under pytest-xdist each worker runs its items and hands each record over on its report; the
controller alone appends records to the JSONL file, aggregates, prints the summary and applies
the gate.

- :mod:`.options`: the option table (``--agent``, ``--limbo-records``, …);
- :mod:`.settings`: what the session was asked to do, and its limbo;
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

from limbo_plugin._rewriting import skip_pytest_assertion_rewriting

skip_pytest_assertion_rewriting()  # a script may import limbo_plugin before pytest.main marks it

from limbo_plugin.errors import LimboError, os_error_line  # noqa: E402
from limbo_plugin.plugin.controller import (  # noqa: E402
    LimboController,
    RunIdToWorkers,
    prepare_controller,
    sync_on_sigterm,
)
from limbo_plugin.plugin.items import (  # noqa: E402
    EpisodeFailure,
    EpisodeItem,
    ExperimentFile,
    InfrastructureFailure,
    SpecErrorPolicy,
    keep_sample,
    keep_shard,
)
from limbo_plugin.plugin.options import add_options, check_rootdir  # noqa: E402
from limbo_plugin.plugin.settings import STATE, start  # noqa: E402


# -- options -------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    from limbo_plugin.plugin.leftover_threads import SESSIONS

    SESSIONS[0] += 1
    try:
        check_rootdir(config)
        limbo = start(config)
        if limbo.settings.redirected:
            config.args[:] = [str(limbo.settings.specs_dir)]
        if limbo.settings.active and not limbo.settings.is_worker:
            prepare_controller(config, limbo)
        elif limbo.settings.active and limbo.settings.resume:
            from limbo_plugin.store.read import read_views

            limbo.run.remember_done(read_views(limbo.settings.records_path), keep=False)
    except LimboError as exc:
        # One line naming the option and what would be valid, before any episode runs.
        raise pytest.UsageError(str(exc)) from None
    except OSError as exc:
        raise pytest.UsageError(os_error_line(exc)) from None
    config.stash[STATE] = limbo
    config.pluginmanager.register(SpecErrorPolicy(), "limbo-spec-errors")
    if limbo.settings.only_specs:
        lean_spec_run(config)
    if not limbo.settings.active:
        hint_below_the_rootdir(config)
        return
    from limbo_plugin.plugin.scrub_reports import ScrubbedReports
    from limbo_plugin.plugin.worker_watch import watch_workers

    config.pluginmanager.register(ScrubbedReports(), "limbo-scrub-reports")
    from limbo_plugin.plugin.protocol import EpisodeProtocol

    config.pluginmanager.register(EpisodeProtocol(config), "limbo-episode-protocol")
    from limbo_plugin.plugin.leftover_threads import LeftoverThreads, outermost

    config.pluginmanager.register(LeftoverThreads(owner=outermost(config)),
                                  "limbo-leftover-threads")
    watch_workers(config, limbo.settings.records_path, limbo.settings.episode_timeout)
    run = limbo.run
    if not limbo.settings.is_worker:
        from limbo_plugin.store.files import RecordWriter

        run.writer = RecordWriter(limbo.settings.records_path)
        config.pluginmanager.register(LimboController(limbo), "limbo-controller")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(RunIdToWorkers(run.run_id), "limbo-run-id")
        sync_on_sigterm(run)
        from limbo_plugin.plugin import progress

        progress.install(config, run.outcomes, limbo.settings.progress,
                         limbo.settings.cost_limit, lambda: limbo.specs.family_order)
    if limbo.settings.cost_limit is not None:
        from limbo_plugin.store.files import CostMeter

        run.cost_meter = CostMeter(limbo.settings.records_path)


def hint_below_the_rootdir(config: pytest.Config) -> None:
    """A run with no Limbo option, from a subdirectory of a Limbo project: say where to run if
    it collects nothing (:class:`~limbo_plugin.plugin.terminal.SubdirectoryHint`)."""
    from limbo_plugin.discovery import subdirectory_hint, subdirectory_run

    root = subdirectory_run(config)
    if root is not None and not hasattr(config, "workerinput"):
        from limbo_plugin.plugin.terminal import SubdirectoryHint

        config.pluginmanager.register(SubdirectoryHint(subdirectory_hint(config, root)),
                                      "limbo-subdirectory-hint")


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
    limbo = session.config.stash.get(STATE, None)
    if limbo is not None and limbo.settings.only_specs:
        # Everything collected lives to the end of the session: leave it out of the cyclic
        # collector's full passes, which otherwise re-scan every item after each few episodes.
        gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    from limbo_plugin.plugin.leftover_threads import SESSIONS

    try:
        _close_run(config)
    finally:
        SESSIONS[0] -= 1


def _close_run(config: pytest.Config) -> None:
    limbo = config.stash.get(STATE, None)
    if limbo is None:
        return
    run = limbo.run
    if run.writer is not None:
        run.writer.close()
        if run.rotated_to is not None and run.writer.written == 0:
            from limbo_plugin.store.files import unrotate

            unrotate(limbo.settings.records_path, run.rotated_to)
    if run.records_lock is not None:
        run.records_lock.release()
    if (run.sigterm_handler is not None
            and signal.getsignal(signal.SIGTERM) is run.sigterm_handler):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- collection ----------------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    limbo = config.stash.get(STATE, None)
    if limbo is None or not limbo.settings.active or file_path.suffix not in (".yaml", ".yml"):
        return None
    if file_path.parent.name != "experiments":
        return None
    named = any(Path(arg.split("::")[0]).resolve() == file_path.resolve()
                for arg in config.args if arg.endswith((".yaml", ".yml")) or "::" in arg)
    if not named and file_path.stem != limbo.settings.experiment:
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


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, EpisodeItem):
            limbo = item.config.stash.get(STATE, None)
            if limbo is not None:
                limbo.run.deselected_episodes += sum(isinstance(i, EpisodeItem) for i in items)
            return


# -- reporting (controller only) -----------------------------------------------------------------
@pytest.hookimpl(trylast=True)  # after -k and -m: a shard is a share of what was selected
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    limbo = config.stash.get(STATE, None)
    if limbo is None:
        return
    episodes = [i for i in items if isinstance(i, EpisodeItem)]
    if config.option.keyword and limbo.run.deselected_episodes and not episodes:
        limbo.run.keyword_selected_nothing = True
    if limbo.settings.sample is not None:  # a pilot of what -k and -m selected
        keep_sample(config, limbo, items)
    if limbo.settings.shard is not None:
        keep_shard(config, limbo, items)
    limbo.run.selected = {(i.episode.key.id, i.episode.config.fingerprint(), i.episode.repeat)
                          for i in items if isinstance(i, EpisodeItem)}


