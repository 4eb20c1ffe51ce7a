"""The controller's side of a run (the only process under pytest-xdist that writes records):
the checks before the first episode, taking each record off its report and writing it, the
gate at the end."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.errors import LimboError, SpecError, UsageError
from limbo_plugin.plugin.items import RECORD_ATTRIBUTE, SKIP_PROPERTY, EpisodeItem, SkipReason
from limbo_plugin.plugin.settings import PREVIOUS, LimboState, _resolve, all_outcomes
from limbo_plugin.plugin.terminal import hint_if_nothing_collected, print_summary
from limbo_plugin.report.record_files import shown_path

if TYPE_CHECKING:
    from limbo_plugin.agents.registry import AgentPlan
    from limbo_plugin.report.gate import GateSpec
    from limbo_plugin.report.outcomes import Outcome


def prepare_controller(config: pytest.Config, state: LimboState) -> None:
    """Everything that can go wrong with the records, the baseline and the gate is found here,
    before the first episode runs (with a real model, a wasted budget otherwise)."""
    from limbo_plugin.report.record_files import check_records_path

    check_records_path(state.records_path)
    writes_records = state.resume or (state.collects_specs and not config.option.collectonly)
    if writes_records:
        take_custody(state)
    try:
        check_before_run(config, state)
    except BaseException:
        if state.records_lock is not None:
            state.records_lock.release()
        raise


def check_before_run(config: pytest.Config, state: LimboState) -> None:
    from limbo_plugin.report.outcomes import scan_outcomes
    from limbo_plugin.report.record_files import repair_torn_tail, rotate

    if state.gate_path is not None:
        state.gate = load_gate_option(state)
    if state.baseline_option is not None:
        state.baseline_path, state.baseline = load_baseline(state)
    if state.resume:
        try:
            state.remember_done(scan_outcomes(state.records_path).records)
        except LimboError as exc:
            raise UsageError(f"--limbo-resume: {exc}; fix or remove that line") from None
        check_resumed_configuration(state)
        repaired = repair_torn_tail(state.records_path)
        if repaired:
            state.notices.append(repaired)
    elif not config.option.collectonly and state.collects_specs:
        moved = rotate(state.records_path)
        if moved is not None:
            state.rotated_to = moved
            state.notices.append(f"the previous records {shown_path(state.records_path)} were "
                                 f"moved to {shown_path(moved)}")


def take_custody(state: LimboState) -> None:
    """The records path holds nothing but Limbo's records, and this run alone writes there:
    its lock is held to the end of the process (another run on the same file stops here)."""
    from limbo_plugin.report.custody import RecordsLock, require_own_file

    require_own_file(state.records_path, "--limbo-records")
    lock = RecordsLock(state.records_path)
    lock.acquire()
    state.records_lock = lock


def check_resumed_configuration(state: LimboState) -> None:
    """A resumed run appends to the file only episodes of the configurations it was started
    with: a resume with other options (a forgotten ``--agent``) would mix two studies."""
    from limbo_plugin.experiments import find_experiment, load_experiment
    from limbo_plugin.records import RUN_FIELDS

    recorded = {outcome.fingerprint() for outcome in state.previous.values()}
    if not recorded or state.registry is None or not state.collects_specs:
        return
    try:
        experiment = load_experiment(find_experiment(state.experiment, state.registry),
                                     state.registry)
    except SpecError:
        return  # reported by collection, with its file and line
    ours = {config.fingerprint() for config in experiment.configs(state.overrides,
                                                                  state.defaults)}
    foreign = sorted(recorded - ours)
    if foreign:
        theirs = dict(zip(RUN_FIELDS, foreign[0].split("|"), strict=False))
        mine = dict(zip(RUN_FIELDS, sorted(ours)[0].split("|"), strict=False))
        differ = ", ".join(f"{name}={theirs[name]}" for name in RUN_FIELDS
                           if theirs.get(name) != mine.get(name)) or foreign[0]
        raise UsageError(f"--limbo-resume: {shown_path(state.records_path)} holds episodes run "
                         f"with {differ}, which this run (experiment {state.experiment!r} with "
                         "these options) does not run; resume with the options the run was "
                         "started with, or give another --limbo-records")


def load_gate_option(state: LimboState) -> GateSpec:
    from limbo_plugin.report.gate import load_gate

    assert state.gate_path is not None
    path = state.gate_path
    if not path.is_file():
        gates = sorted(p.name for p in (state.specs_dir / "gates").glob("*.yaml"))
        known = f"; gates in {shown_path(state.specs_dir / 'gates')}: {', '.join(gates)}" \
            if gates else ""
        what = "is a directory" if path.is_dir() else "no such file"
        raise UsageError(f"--limbo-gate: {shown_path(path)}: {what}{known}")
    families = state.registry.family_order if state.registry is not None else None
    try:
        return load_gate(path, families=families)
    except SpecError as exc:
        raise UsageError(f"--limbo-gate: {exc.render(state.root)}") from None


def load_baseline(state: LimboState) -> tuple[Path, list[Outcome]]:
    """The baseline's path and records, read before the records file is rotated: ``previous``
    is the file this run is about to replace (on resume, the latest one in its history)."""
    from limbo_plugin.report.outcomes import scan_outcomes
    from limbo_plugin.report.record_files import previous_records

    value = state.baseline_option or ""
    if value == PREVIOUS:
        path = previous_records(state.records_path, resume=state.resume)
        if path is None:
            raise UsageError(f"--limbo-baseline previous: there is no previous run: "
                             f"{shown_path(state.records_path)} does not exist yet and its "
                             "history/ is empty; run once without a baseline first")
    else:
        path = _resolve(state.root, value)
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "no such file"
            raise UsageError(f"--limbo-baseline: {shown_path(path)}: {what}; give a records file "
                             f"of an earlier run, or 'previous'")
    try:
        records = scan_outcomes(path).records
    except LimboError as exc:
        raise UsageError(f"--limbo-baseline: {exc}") from None
    if not records:
        raise UsageError(f"--limbo-baseline: {shown_path(path)} holds no records")
    return path, records


class RunIdToWorkers:
    """Hands the controller's run id to every xdist worker, so all records of one session
    share it."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id

    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["limbo_run_id"] = self.run_id


def sync_on_sigterm(state: LimboState) -> None:
    """SIGTERM (a cancelled CI job, an evicted pod) syncs the record file and then stops the run
    as Ctrl-C does, so the summary is written; only where nobody else handles SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
        if state.writer is not None:
            state.writer.sync()
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_sigterm)
    state.sigterm_handler = on_sigterm


class LimboController:
    """Controller-side hooks: records arrive here from every worker (or from this process)."""

    def __init__(self, state: LimboState) -> None:
        self.state = state
        self.checked_agents = False
        self._terminal_stats: dict[str, list[Any]] | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None]:
        self.take_record(report)
        yield
        self.forget_empty_phase(report)

    def forget_empty_phase(self, report: pytest.TestReport) -> None:
        """Drop an episode's passed setup or teardown report, with no captured output, from
        the terminal reporter's statistics, which keep every report to the end of the run.

        Nothing is printed from them; but they are two thirds of the reports, and pytest's
        failure summary scans every kept report once per failure (pytest-dev/pytest#13360):
        at 50,000 episodes with 16% failing, that scan took longer than the episodes.
        """
        if report.when == "call" or not report.passed or report.sections:
            return
        if not _in_experiments(report.nodeid):
            return
        if self._terminal_stats is None:
            reporter = self.state.config.pluginmanager.get_plugin("terminalreporter")
            self._terminal_stats = getattr(reporter, "stats", None) or {}
        kept = self._terminal_stats.get("")
        if kept and kept[-1] is report:
            kept.pop()

    def take_record(self, report: pytest.TestReport) -> None:
        if str(report.when) == "???" and self.state.writer is not None:  # xdist: a worker died
            from limbo_plugin.report.abandoned import collect_abandoned

            for line in collect_abandoned(self.state.records_path):
                self.state.writer.write(line)
                self.take_outcome(line)
        line = report.__dict__.pop(RECORD_ATTRIBUTE, None)
        if line is not None and self.state.writer is not None:
            from limbo_plugin.report.outcomes import Outcome
            from limbo_plugin.report.record_files import RecordWriteError

            try:  # read back before it is written: a line the file cannot hold stays out
                outcome = Outcome.from_json(line)
            except ValueError as exc:
                self.state.late_notices.append(f"the record of {report.nodeid} does not read back "
                                          f"({' '.join(str(exc).split())[:300]}); not written")
                outcome = None
            if outcome is not None:
                try:
                    self.state.writer.write(line)
                except RecordWriteError as exc:  # a full disk: one line, exit 3
                    self.state.write_failed = True
                    pytest.exit(str(exc), returncode=pytest.ExitCode.INTERNAL_ERROR)
                self.state.outcomes[outcome.identity] = outcome
        if report.when != "teardown":  # the item's properties, counted once
            return
        for name, value in report.user_properties:
            if name == SKIP_PROPERTY:
                reason = SkipReason(str(value))
                self.state.skips[reason] = self.state.skips.get(reason, 0) + 1

    def take_outcome(self, line: str) -> None:
        from limbo_plugin.report.outcomes import Outcome

        with contextlib.suppress(ValueError):
            outcome = Outcome.from_json(line)
            self.state.outcomes[outcome.identity] = outcome

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for notice in self.state.notices:
                reporter.write_line(f"limbo: {notice}", yellow=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first episode: every selected agent can run on this machine (a harness
        CLI is installed), with the options and under the conditions it is given. Under xdist
        the controller has no items; it checks the workers' collection instead (below)."""
        if session.config.option.collectonly or session.config.pluginmanager.has_plugin(
                "dsession"):
            return
        from limbo_plugin.agents.registry import AgentPlan

        require_ready({AgentPlan.of(i.episode.config.agent, i.episode.config.condition,
                                    i.model_options)
                       for i in session.items if isinstance(i, EpisodeItem)})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.checked_agents or self.state.registry is None:
            return  # checked once; a broken spec tree is reported by its error item
        self.checked_agents = True
        from limbo_plugin.experiments import plans_of_items

        root = Path(str(self.state.config.rootpath))
        require_ready(plans_of_items(ids, root, self.state.registry, self.state.overrides,
                                     self.state.defaults, self.state.model_options))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.state.stopped_early = (exitstatus == pytest.ExitCode.INTERRUPTED
                                    or bool(session.shouldstop or session.shouldfail))
        if self.state.gate is not None:
            apply_gate(session, self.state, self.state.gate, exitstatus)
        if self.state.collects_specs and not session.config.option.collectonly:
            from limbo_plugin.report.runs import log_run

            log_run(self.state.records_path, self.state.run_id,
                    [str(a) for a in session.config.invocation_params.args],
                    getattr(session.config.option, "file_or_dir", None) or [],
                    len(self.state.outcomes))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int,
                                config: pytest.Config) -> Iterator[None]:
        # After pytest's own sections (failures, the short summary), so the family table is
        # the last thing before the final counts, not buried between failure blocks.
        try:
            return (yield)
        finally:
            print_summary(terminalreporter, self.state)
            hint_if_nothing_collected(terminalreporter, self.state, exitstatus)


def _in_experiments(nodeid: str) -> bool:
    """Whether a node id names an item of an experiment spec (``…/experiments/x.yaml::…``):
    a string test, as it runs for every report (node ids always use ``/``)."""
    directory = nodeid.split("::", 1)[0].rpartition("/")[0]
    return directory.rpartition("/")[2] == "experiments"


def require_ready(plans: set[AgentPlan]) -> None:
    """Stop the run, before any episode, with one line if an agent cannot run here (or not
    with the options and conditions this run gives it)."""
    from limbo_plugin.agents.registry import check_ready

    try:
        check_ready(plans)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def apply_gate(session: pytest.Session, state: LimboState, gate: GateSpec,
               exitstatus: int) -> None:
    from limbo_plugin.report.gate import run_gate

    baseline = state.baseline if state.baseline_path is not None else None
    result = run_gate(gate, all_outcomes(state), family_order=state.family_order,
                      baseline=baseline)
    state.gate_result = result
    # With a gate, its verdict decides CI: episode failures alone no longer fail the run, but
    # collection errors, infrastructure errors and interruptions still do.
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not _errors(session):
        session.exitstatus = pytest.ExitCode.OK if result.passed else pytest.ExitCode.TESTS_FAILED
    elif not result.passed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _errors(session: pytest.Session) -> bool:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) if reporter else {}
    return bool(stats.get("error"))
