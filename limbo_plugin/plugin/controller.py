"""The controller's side of a run (the only process under pytest-xdist that writes records):
the checks before the first episode, taking each record off its report and writing it, the
gate at the end."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.errors import LimboError, SpecError, UsageError
from limbo_plugin.plugin.items import (
    RECORD_ATTRIBUTE,
    SKIP_PROPERTY,
    VIEW_ATTRIBUTE,
    EpisodeItem,
    SkipReason,
)
from limbo_plugin.plugin.settings import Limbo, RunState, _resolve
from limbo_plugin.plugin.terminal import (
    hint_if_keyword_selects_nothing,
    hint_if_nothing_collected,
    print_summary,
)
from limbo_plugin.store.files import shown_path

if TYPE_CHECKING:
    from limbo_plugin.agents.registry import AgentPlan
    from limbo_plugin.report.gate import GateSpec
    from limbo_plugin.store.view import EpisodeView

INFRASTRUCTURE_ERROR = 10
"""The exit status of a run that infrastructure stopped or left incomplete: the preflight
failed, ``--limbo-max-errors`` consecutive infrastructure errors stopped it, or episodes ended
in one (``--limbo-resume`` re-runs them). Outside pytest's own statuses (0-6), so CI can tell
it from a failed gate (1) and a usage error (4)."""

PREVIOUS = "previous"
"""``--limbo-baseline previous``: the records this run is about to replace."""


def prepare_controller(config: pytest.Config, limbo: Limbo) -> None:
    """Everything that can go wrong with the records, the baseline and the gate is found here,
    before the first episode runs (with a real model, a wasted budget otherwise)."""
    from limbo_plugin.store.files import check_records_path

    settings, run = limbo.settings, limbo.run
    check_records_path(settings.records_path)
    writes_records = settings.resume or (settings.collects_specs and not config.option.collectonly)
    if writes_records:
        take_custody(limbo)
    try:
        check_before_run(config, limbo)
    except BaseException:
        if run.records_lock is not None:
            run.records_lock.release()
        raise


def check_before_run(config: pytest.Config, limbo: Limbo) -> None:
    from limbo_plugin.store.files import repair_torn_tail, rotate
    from limbo_plugin.store.read import scan_views

    settings, run = limbo.settings, limbo.run
    if settings.gate_path is not None:
        run.gate = load_gate_option(limbo)
    if settings.baseline_option is not None:
        run.baseline_path, run.baseline = load_baseline(limbo)
    if settings.resume:
        try:
            done = scan_views(settings.records_path)
        except LimboError as exc:
            raise UsageError(f"--limbo-resume: {exc}; fix or remove that line") from None
        run.remember_done(done.records, keep=True)
        if done.duplicate_notice:
            run.notices.append(done.duplicate_notice)
        check_resumed_configuration(limbo)
        check_fingerprint(limbo)
        repaired = repair_torn_tail(settings.records_path)
        if repaired:
            run.notices.append(repaired)
    elif not config.option.collectonly and settings.collects_specs:
        moved = rotate(settings.records_path)
        if moved is not None:
            run.rotated_to = moved
            run.notices.append(f"the previous records {shown_path(settings.records_path)} were "
                                 f"moved to {shown_path(moved)}")
        check_fingerprint(limbo)


def check_fingerprint(limbo: Limbo) -> None:
    """A resume continues the file only with the specs and model options its episodes were made
    with (:mod:`limbo_plugin.store.fingerprint`); a fresh file gets theirs."""
    from limbo_plugin.store.fingerprint import check_or_write, run_fingerprint

    settings = limbo.settings
    current = run_fingerprint(settings.specs_dir, settings.model_options)
    changed = check_or_write(settings.records_path, current, resume=settings.resume)
    if changed:
        raise UsageError(f"--limbo-resume: {shown_path(settings.records_path)} was recorded with "
                         f"other specs or options ({changed}); resume with the ones it was "
                         "started with, or run without --limbo-resume to start a new file (the "
                         "old one moves to history/)")


def take_custody(limbo: Limbo) -> None:
    """The records path holds nothing but Limbo's records, and this run alone writes there:
    its lock is held to the end of the process (another run on the same file stops here)."""
    from limbo_plugin.store.custody import RecordsLock, require_own_file

    settings, run = limbo.settings, limbo.run
    require_own_file(settings.records_path, "--limbo-records")
    lock = RecordsLock(settings.records_path)
    lock.acquire()
    run.records_lock = lock


def check_resumed_configuration(limbo: Limbo) -> None:
    """A resumed run appends to the file only episodes of the configurations it was started
    with: a resume with other options (a forgotten ``--agent``) would mix two studies."""
    from limbo_plugin.experiments import find_experiment, load_experiment
    from limbo_plugin.records import RUN_FIELDS

    settings, run = limbo.settings, limbo.run
    recorded = {outcome.fingerprint() for outcome in run.previous.values()}
    if not recorded or limbo.specs.registry is None or not settings.collects_specs:
        return
    try:
        experiment = load_experiment(find_experiment(settings.experiment, limbo.specs.registry),
                                     limbo.specs.registry)
    except SpecError:
        return  # reported by collection, with its file and line
    ours = {config.fingerprint() for config in experiment.configs(settings.overrides,
                                                                  limbo.specs.defaults)}
    foreign = sorted(recorded - ours)
    if foreign:
        theirs = dict(zip(RUN_FIELDS, foreign[0].split("|"), strict=False))
        mine = dict(zip(RUN_FIELDS, sorted(ours)[0].split("|"), strict=False))
        differ = ", ".join(f"{name}={theirs[name]}" for name in RUN_FIELDS
                           if theirs.get(name) != mine.get(name)) or foreign[0]
        raise UsageError(f"--limbo-resume: {shown_path(settings.records_path)} holds episodes run "
                         f"with {differ}, which this run (experiment {settings.experiment!r} with "
                         "these options) does not run; resume with the options the run was "
                         "started with, or give another --limbo-records")


def load_gate_option(limbo: Limbo) -> GateSpec:
    from limbo_plugin.report.gate import load_gate

    settings = limbo.settings
    assert settings.gate_path is not None
    path = settings.gate_path
    if not path.is_file():
        gates = sorted(p.name for p in (settings.specs_dir / "gates").glob("*.yaml"))
        known = f"; gates in {shown_path(settings.specs_dir / 'gates')}: {', '.join(gates)}" \
            if gates else ""
        what = "is a directory" if path.is_dir() else "no such file"
        raise UsageError(f"--limbo-gate: {shown_path(path)}: {what}{known}")
    families = limbo.specs.registry.family_order if limbo.specs.registry is not None else None
    try:
        return load_gate(path, families=families)
    except SpecError as exc:
        raise UsageError(f"--limbo-gate: {exc.render(settings.root)}") from None


def load_baseline(limbo: Limbo) -> tuple[Path, list[EpisodeView]]:
    """The baseline's path and records, read before the records file is rotated: ``previous``
    is the file this run is about to replace (on resume, the latest one in its history)."""
    from limbo_plugin.store.files import previous_records
    from limbo_plugin.store.read import scan_views

    settings = limbo.settings
    value = settings.baseline_option or ""
    if value == PREVIOUS:
        path = previous_records(settings.records_path, resume=settings.resume)
        if path is None:
            raise UsageError(f"--limbo-baseline previous: there is no previous run: "
                             f"{shown_path(settings.records_path)} does not exist yet and its "
                             "history/ is empty; run without --limbo-baseline (the gate's "
                             "thresholds alone judge the run), or give a pinned records file "
                             "such as main's")
    else:
        path = _resolve(settings.root, value)
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "no such file"
            raise UsageError(f"--limbo-baseline: {shown_path(path)}: {what}; give a records file "
                             "of an earlier run, or 'previous', or run without "
                             "--limbo-baseline (the gate's thresholds alone judge the run)")
    try:
        scan = scan_views(path)
    except LimboError as exc:
        raise UsageError(f"--limbo-baseline: {exc}") from None
    records = scan.records
    if scan.duplicate_notice:
        limbo.run.notices.append(f"--limbo-baseline: {scan.duplicate_notice}")
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


def sync_on_sigterm(run: RunState) -> None:
    """SIGTERM (a cancelled CI job, an evicted pod) syncs the record file and then stops the run
    as Ctrl-C does, so the summary is written; only where nobody else handles SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
        if run.writer is not None:
            run.writer.sync()
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, on_sigterm)
    run.sigterm_handler = on_sigterm


class LimboController:
    """Controller-side hooks: records arrive here from every worker (or from this process)."""

    def __init__(self, limbo: Limbo) -> None:
        self.limbo = limbo
        self.settings, self.specs, self.run = limbo.settings, limbo.specs, limbo.run
        self.checked_agents = False
        self._terminal_stats: dict[str, list[Any]] | None = None
        self.session: pytest.Session | None = None
        self.started: dict[str, None] = {}
        """Episodes that started, in order (node ids); each leaves a record, or is skipped."""
        self.accounted: set[str] = set()

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        if _in_experiments(nodeid):
            self.started[nodeid] = None

    def unrecorded_notice(self) -> str | None:
        """One line naming the episodes that started but left no record (an agent that ended
        its process, raised something no episode catches, or a worker that died): they are
        not in the rates, and --limbo-resume runs them again."""
        missing = [nodeid for nodeid in self.started if nodeid not in self.accounted]
        if not missing:
            return None
        shown = ", ".join(nodeid.rpartition("::")[2] for nodeid in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        return (f"{len(missing)} episode(s) started but left no record ({shown}{more}): they "
                "are not in the rates; --limbo-resume runs them again")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None]:
        if report.skipped:  # not run (resume, --limbo-sample, a skip mark): no record expected
            self.accounted.add(report.nodeid)
        if getattr(report, RECORD_ATTRIBUTE, None) is not None:
            self.accounted.add(report.nodeid)
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
            reporter = self.limbo.config.pluginmanager.get_plugin("terminalreporter")
            self._terminal_stats = getattr(reporter, "stats", None) or {}
        kept = self._terminal_stats.get("")
        if kept and kept[-1] is report:
            kept.pop()

    def take_record(self, report: pytest.TestReport) -> None:
        if str(report.when) == "???" and self.run.writer is not None:  # xdist: a worker died
            from limbo_plugin.store.abandoned import collect_abandoned

            for line in collect_abandoned(self.settings.records_path):
                self.run.writer.write(line)
                self.take_outcome(line)
        line = report.__dict__.pop(RECORD_ATTRIBUTE, None)
        outcome: EpisodeView | None = report.__dict__.pop(VIEW_ATTRIBUTE, None)
        if line is not None and self.run.writer is not None:
            from limbo_plugin.store.files import RecordWriteError
            from limbo_plugin.store.view import EpisodeView

            if outcome is None:  # from a worker: read back before it is written
                try:  # a line the file cannot hold stays out
                    outcome = EpisodeView.from_json(line)
                except ValueError as exc:
                    self.run.late_notices.append(
                        f"the record of {report.nodeid} does not read back "
                        f"({' '.join(str(exc).split())[:300]}); not written")
            if outcome is not None:
                try:
                    self.run.writer.write(line)
                except RecordWriteError as exc:  # a full disk: one line, exit 3
                    self.run.write_failed = True
                    pytest.exit(str(exc), returncode=pytest.ExitCode.INTERNAL_ERROR)
                self.run.outcomes[outcome.identity] = outcome
                self.count_errors(outcome)
        if report.when != "teardown":  # the item's properties, counted once
            return
        for name, value in report.user_properties:
            if name == SKIP_PROPERTY:
                reason = SkipReason(str(value))
                self.run.skips[reason] = self.run.skips.get(reason, 0) + 1

    def count_errors(self, outcome: EpisodeView) -> None:
        """Stop the run after ``--limbo-max-errors`` infrastructure errors in a row: a refused
        key or a gateway that went away would otherwise cost every remaining episode its
        retries. The episodes already running finish and are recorded."""
        run, limit = self.run, self.settings.max_errors
        run.consecutive_errors = run.consecutive_errors + 1 if outcome.error else 0
        if not limit or run.consecutive_errors < limit or run.stopped_for_errors:
            return
        cause = (outcome.error or "").strip().splitlines()[0][:300]
        run.stopped_for_errors = (
            f"limbo: stopped after {run.consecutive_errors} consecutive infrastructure errors "
            f"(--limbo-max-errors {limit}); the last: {cause}. Finished episodes are recorded; "
            "fix the cause and continue with --limbo-resume")
        stop_session(self.session, self.limbo.config, run.stopped_for_errors)

    def take_outcome(self, line: str) -> None:
        from limbo_plugin.store.view import EpisodeView

        with contextlib.suppress(ValueError):
            outcome = EpisodeView.from_json(line)
            self.run.outcomes[outcome.identity] = outcome

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def announce(self) -> None:
        """The notices before the run (the previous records moved to history/, a torn line
        repaired), once every check before the first episode has passed: a run stopped by a
        usage error or the preflight moves nothing back and must not say it did."""
        notices, self.run.notices = self.run.notices, []
        reporter = self.limbo.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for notice in notices:
                reporter.write_line(f"limbo: {notice}", yellow=True)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first episode: every selected agent can run on this machine (a harness
        CLI is installed), with the options and under the conditions it is given. Under xdist
        the controller has no items; it checks the workers' collection instead (below)."""
        if session.config.pluginmanager.has_plugin("dsession"):
            return
        if session.config.option.collectonly:
            self.announce()
            return
        from limbo_plugin.agents.registry import AgentPlan

        counted: Counter[AgentPlan] = Counter(
            AgentPlan.of(i.episode.config.agent, i.episode.config.condition, i.model_options)
            for i in session.items if isinstance(i, EpisodeItem))
        plans = set(counted)
        require_ready(plans)
        self.preflight(plans)
        self.announce()
        self.print_plan(counted)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not ids and self.limbo.config.option.keyword:  # every worker collects the same
            self.run.keyword_selected_nothing = True
        if self.checked_agents or self.specs.registry is None:
            if not self.checked_agents:
                self.announce()
            return  # checked once; a broken spec tree is reported by its error item
        self.checked_agents = True
        from limbo_plugin.experiments import counted_plans

        root = Path(str(self.limbo.config.rootpath))
        counted = counted_plans(ids, root, self.specs.registry, self.settings.overrides,
                                self.specs.defaults, self.settings.model_options)
        plans = set(counted)
        require_ready(plans)
        self.preflight(plans)
        self.announce()
        self.print_plan(counted)

    def print_plan(self, counted: Counter[AgentPlan]) -> None:
        """Before a model-backed run: its plan line per model agent (episodes, model calls,
        tokens, estimated cost, as ``limbo plan`` estimates them) and the budget."""
        from limbo_plugin.plugin.terminal import plan_lines

        per_agent: Counter[str] = Counter()
        for plan, count in counted.items():
            per_agent[plan.agent] += count
        reporter = self.limbo.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        for line in plan_lines(per_agent, self.settings.cost_limit, len(self.run.done)):
            reporter.write_line(line, yellow=True)

    def preflight(self, plans: set[AgentPlan]) -> None:
        """One real request per model endpoint of ``plans`` before the first episode
        (:mod:`limbo_plugin.agents.preflight`); a failure stops the run with one line and the
        infrastructure exit status. Off with ``--limbo-preflight=off``, and when a cassette
        replays every answer; nothing to ask when every episode is already recorded."""
        settings = self.settings
        if not settings.preflight or settings.agent_options.cassette_mode == "replay":
            return
        if self.run.done and all(
                identity in self.run.done for identity in self.run.selected):
            return
        from limbo_plugin.agents.preflight import preflight

        problem = preflight(plans)
        if problem is not None:
            self.run.stopped_for_errors = f"limbo: {problem}"
            pytest.exit(self.run.stopped_for_errors, returncode=INFRASTRUCTURE_ERROR)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        if interrupted and not self.settings.is_worker:
            from limbo_plugin.plugin.workers import interrupt_workers

            interrupt_workers(session.config)  # before xdist waits for them to exit
        self.run.stopped_early = interrupted or bool(session.shouldstop or session.shouldfail)
        if self.run.gate is not None:
            apply_gate(session, self.limbo, self.run.gate, exitstatus)
        if infrastructure_failed(self.run, exitstatus):
            session.exitstatus = INFRASTRUCTURE_ERROR
        if self.settings.collects_specs and not session.config.option.collectonly:
            from limbo_plugin.store.runs import log_run

            log_run(self.settings.records_path, self.run.run_id,
                    [str(a) for a in session.config.invocation_params.args],
                    getattr(session.config.option, "file_or_dir", None) or [],
                    len(self.run.outcomes))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int,
                                config: pytest.Config) -> Iterator[None]:
        # After pytest's own sections (failures, the short summary), so the family table is
        # the last thing before the final counts, not buried between failure blocks.
        try:
            return (yield)
        finally:
            notice = self.unrecorded_notice()
            if notice is not None:
                self.run.late_notices.append(notice)
            print_summary(terminalreporter, self.limbo)
            hint_if_keyword_selects_nothing(terminalreporter, self.limbo)
            hint_if_nothing_collected(terminalreporter, self.limbo, exitstatus)


def _in_experiments(nodeid: str) -> bool:
    """Whether a node id names an item of an experiment spec (``…/experiments/x.yaml::…``):
    a string test, as it runs for every report (node ids always use ``/``)."""
    path = nodeid.split("::", 1)[0]
    if not path.endswith((".yaml", ".yml")):  # a test module in a folder named experiments
        return False
    return path.rpartition("/")[0].rpartition("/")[2] == "experiments"


def require_ready(plans: set[AgentPlan]) -> None:
    """Stop the run, before any episode, with one line if an agent cannot run here (or not
    with the options and conditions this run gives it)."""
    from limbo_plugin.agents.registry import check_ready

    try:
        check_ready(plans)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def stop_session(session: pytest.Session | None, config: pytest.Config, reason: str) -> None:
    """Stop starting episodes, serially or under pytest-xdist (whose controller loop reads its
    own ``shouldstop``); pytest prints ``reason`` as the run's last line."""
    if session is not None:
        session.shouldstop = reason
    dsession = config.pluginmanager.get_plugin("dsession")
    if dsession is not None and not getattr(dsession, "shouldstop", False):
        dsession.shouldstop = reason


def infrastructure_failed(run: RunState, exitstatus: int) -> bool:
    """Whether the run ends with :data:`INFRASTRUCTURE_ERROR`: the preflight or
    ``--limbo-max-errors`` stopped it, or an episode of this run ended in an infrastructure
    error (unless the user interrupted it or Limbo could not write its records, whose own
    statuses stand)."""
    if run.stopped_for_errors:
        return True
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR) or \
            run.write_failed:
        return False
    return any(outcome.error is not None for outcome in run.outcomes.values())


def apply_gate(session: pytest.Session, limbo: Limbo, gate: GateSpec,
               exitstatus: int) -> None:
    from limbo_plugin.plugin.gate_results import report_checks
    from limbo_plugin.report.gate import run_gate

    run = limbo.run
    baseline = run.baseline if run.baseline_path is not None else None
    result = run_gate(gate, run.all_outcomes(), family_order=limbo.specs.family_order,
                      baseline=baseline)
    run.gate_result = result
    assert limbo.settings.gate_path is not None
    report_checks(session, limbo.settings.gate_path, result)
    # With a gate, its verdict decides CI: the episodes are measurements that passed, and
    # each check is a test result; collection errors and interruptions still fail the run
    # (infrastructure errors have their own status, set after this).
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and not _errors(session):
        session.exitstatus = pytest.ExitCode.OK if result.passed else pytest.ExitCode.TESTS_FAILED
    elif not result.passed:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _errors(session: pytest.Session) -> bool:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(reporter, "stats", {}) if reporter else {}
    return bool(stats.get("error"))
