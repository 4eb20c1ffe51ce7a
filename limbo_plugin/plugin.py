"""pytest plugin (entry point ``pytest11``): options, collection, reporting. Wiring only.

A bare ``pytest`` collects the experiment named by ``--experiment`` (default ``default``) from
``specs/experiments/`` into one item per episode; ``pytest tests`` runs the project's own suite.
Under pytest-xdist each worker runs its items and puts each record in ``user_properties``; the
controller alone appends records to the JSONL file, aggregates, prints the summary and applies
the gate.
"""

from __future__ import annotations

import enum
import gc
import signal
import threading
import time
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.errors import LimboError, SpecError, UsageError
from limbo_plugin.records import RUN_FIELDS

if TYPE_CHECKING:  # the rest is imported when used: a plugin import must stay cheap
    from limbo_plugin.agents.options import AgentOptions
    from limbo_plugin.experiments import Episode, EpisodeLabels
    from limbo_plugin.records import EpisodeRecord
    from limbo_plugin.report.gate import GateResult
    from limbo_plugin.report.outcomes import Outcome
    from limbo_plugin.report.records import CostMeter, RecordWriter
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.sharding import Shard
    from limbo_plugin.spec.registry import SpecRegistry

RECORD_ATTRIBUTE = "limbo_record"
"""The teardown report of an episode carries its record's JSON line under this attribute: it
travels from an xdist worker to the controller once, and the controller takes it off the report
(which pytest keeps to the end of the run) as it writes the line."""
SKIP_PROPERTY = "limbo_skip"


class SkipReason(enum.StrEnum):
    """Why an episode was not started; it travels with the item's reports (``user_properties``),
    so the controller counts skips by reason, under xdist too, without reading their text."""

    RESUMED = "resumed"
    COST_LIMIT = "cost_limit"


OPTIONS: dict[str, tuple[str, str]] = {
    # dest: (flag, help); every one can also be set in pytest.ini as limbo_<dest>
    "agent": ("--agent", "agent to evaluate: scripted:<policy>, mcp:<policy>, litellm:<model>, "
              "harness:<codex|copilot|hermes>:<model>, harness:command:<name|path>, "
              "python:<module>:<callable> (default scripted:verify_first)"),
    "contract": ("--contract", "contract variant: native or keys_everywhere"),
    "docs": ("--docs", "documentation variant: default, no_consistency_docs, explicit"),
    "instruction": ("--instruction", "instruction variant: default or no_cue"),
    "condition": ("--condition", "recovery condition (vanilla, aware, reflect, sdk_retry, …)"),
    "operator": ("--operator", "operator variant: truthful or unresponsive"),
    "experiment": ("--experiment", "experiment spec under specs/experiments/ (default: default)"),
    "limbo_records": ("--limbo-records", "JSONL file of episode records "
                      "(default reports/episodes.jsonl)"),
    "limbo_gate": ("--limbo-gate", "gate spec (e.g. specs/gates/release.yaml): its verdict "
                   "decides the exit status"),
    "limbo_baseline": ("--limbo-baseline", "records of a previous run to compare with "
                       "(exact McNemar on paired episodes)"),
    "limbo_specs": ("--limbo-specs", "the specs directory (default: <rootdir>/specs)"),
    "limbo_cassette": ("--limbo-cassette", "directory recording/replaying model responses"),
    "limbo_cassette_mode": ("--limbo-cassette-mode", "record, replay or auto (default auto)"),
    "limbo_cost_limit": ("--limbo-cost-limit", "stop starting episodes once this many USD "
                         "of model cost are recorded"),
    "limbo_provider_retries": ("--limbo-provider-retries", "attempts per model call on "
                               "provider errors (default 8)"),
    "limbo_provider_backoff": ("--limbo-provider-backoff", "base of the exponential backoff "
                               "in seconds (default 1.0)"),
    "limbo_shard": ("--limbo-shard", "run shard K of N (K from 0) of the collected episodes: "
                    "every world's episodes on one shard, balanced by expected cost; "
                    "env:VAR/N reads K from $VAR (e.g. env:JOB_COMPLETION_INDEX/4)"),
}
DEFAULTS = {"experiment": "default", "limbo_records": "reports/episodes.jsonl"}
"""Built-in defaults of the plugin's own options; run-configuration and agent options default
in :class:`RunConfig` and :class:`AgentOptions`."""
AGENT_OPTION_FLAGS = {"model_options": "--model-option", "cassette": "--limbo-cassette",
                      "cassette_mode": "--limbo-cassette-mode",
                      "provider_retries": "--limbo-provider-retries",
                      "provider_backoff_s": "--limbo-provider-backoff"}
STATE = pytest.StashKey["LimboState"]()


# -- options -------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("limbo", "Limbo: duplicate side effects of tool-using agents")
    for dest, (flag, help_text) in OPTIONS.items():
        group.addoption(flag, dest=f"limbo_opt_{dest}", default=None, help=help_text)
        parser.addini(f"limbo_{dest}" if not dest.startswith("limbo_") else dest,
                      help_text, default=None)
    group.addoption("--model-option", dest="limbo_model_options", action="append", default=[],
                    metavar="KEY=VALUE",
                    help="option passed to the model (temperature=0, api_base=…); repeatable")
    group.addoption("--limbo-resume", dest="limbo_resume", action="store_true", default=False,
                    help="skip episodes already recorded with the same configuration")
    parser.addini("limbo_resume", "resume by default", type="bool", default=False)


def option(config: pytest.Config, dest: str) -> str | None:
    """Command line, then pytest.ini (``limbo_<name>``), then the built-in default."""
    value = config.getoption(f"limbo_opt_{dest}", default=None)
    if value is None:
        ini = config.getini(f"limbo_{dest}" if not dest.startswith("limbo_") else dest)
        value = ini or None
    if value is None:
        value = DEFAULTS.get(dest)
    return value


class LimboState:
    """Per-session state: the specs and the options, each validated once here (a bad value is
    a :class:`UsageError`), and, on the controller, the collected records."""

    def __init__(self, config: pytest.Config) -> None:
        from limbo_plugin.spec.registry import default_specs_dir

        self.config = config
        root = Path(str(config.rootpath))
        specs = option(config, "limbo_specs")
        candidate = root / "specs"
        self.specs_dir = Path(specs).resolve() if specs else (
            candidate if (candidate / "services").is_dir() else default_specs_dir())
        self._registry: SpecRegistry | None = None
        self.spec_error: SpecError | None = None
        self.specs_loaded = False
        self.experiment = option(config, "experiment") or "default"
        self.collects_specs = collects_specs(config, self.specs_dir)
        self.only_specs = collects_only_specs(config, self.specs_dir)
        self.sigterm_handler: Any = None
        if self.collects_specs:
            # Validated now, before the first episode; a run that collects no specs (``pytest
            # tests``) loads them only if something asks (see :attr:`registry`).
            self.load_specs()
        self.records_path = _resolve(root, option(config, "limbo_records") or "")
        gate = option(config, "limbo_gate")
        baseline = option(config, "limbo_baseline")
        self.gate_path = _resolve(root, gate) if gate else None
        self.baseline_path = _resolve(root, baseline) if baseline else None
        self.resume = bool(config.getoption("limbo_resume") or config.getini("limbo_resume"))
        self.is_worker = hasattr(config, "workerinput")
        self.overrides = {name: option(config, name) for name in RUN_FIELDS}
        self._defaults: RunConfig | None = None
        if self.collects_specs:
            self._defaults = self._run_defaults()
        from limbo_plugin.agents.options import parse_model_options

        self.model_options = parse_model_options(config.getoption("limbo_model_options") or [])
        shard = option(config, "limbo_shard")
        self.shard = _shard(shard) if shard else None
        cost = option(config, "limbo_cost_limit")
        self.cost_limit = _positive_float("--limbo-cost-limit", cost) if cost else None
        self.agent_options = parse_agent_options({
            "model_options": self.model_options,
            "cassette": option(config, "limbo_cassette"),
            "cassette_mode": option(config, "limbo_cassette_mode"),
            "provider_retries": option(config, "limbo_provider_retries"),
            "provider_backoff_s": option(config, "limbo_provider_backoff"),
            "reports_dir": str(self.records_path.parent),  # harness transcripts go here
        })
        self.done: set[tuple[str, str]] = set()
        self.previous: dict[tuple[str, str], Outcome] = {}
        self.outcomes: dict[tuple[str, str], Outcome] = {}
        """This run's episodes, one slim row each (the JSONL file holds the records)."""
        self.writer: RecordWriter | None = None
        self.cost_meter: CostMeter | None = None
        self.gate_result: GateResult | None = None
        self.skips: dict[SkipReason, int] = {}
        self.started = time.monotonic()
        self.selected: set[tuple[str, str]] = set()
        self.baseline: list[Outcome] = []

    def load_specs(self) -> None:
        """Load and check the spec tree once; a broken one is kept as :attr:`spec_error`."""
        from limbo_plugin.experiments import find_experiment
        from limbo_plugin.spec.registry import SpecRegistry

        if self.specs_loaded:
            return
        self.specs_loaded = True
        try:
            self._registry = SpecRegistry.load(self.specs_dir)
        except SpecError as exc:
            # A broken spec is reported by collection as one failing item (with its file and
            # line), not as a dead session: ``pytest tests`` must still run.
            self.spec_error = exc
            return
        find_experiment(self.experiment, self._registry)
        for name, description in self._registry.fault_markers().items():
            self.config.addinivalue_line("markers", f"{name}: Limbo episodes: {description}")

    def _run_defaults(self) -> RunConfig:
        from limbo_plugin.runconfig import RunConfig

        given = {name: value for name, value in self.overrides.items() if value is not None}
        return RunConfig.parse(given, registry=self.registry)

    @property
    def defaults(self) -> RunConfig:
        """The run configuration the options give, checked against the specs (on first use in
        a run that collects no specs)."""
        if self._defaults is None:
            try:
                self._defaults = self._run_defaults()
            except UsageError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._defaults

    @property
    def registry(self) -> SpecRegistry | None:
        """The spec registry, loaded on first use; ``None`` when the spec tree is broken."""
        if not self.specs_loaded:
            try:
                self.load_specs()
            except UsageError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._registry

    @property
    def family_order(self) -> tuple[str, ...]:
        """The order of report rows: the fault spec's (none if the specs did not load)."""
        return self.registry.family_order if self.registry is not None else ()

    @property
    def specs(self) -> SpecRegistry:
        """The session's spec registry; a broken spec tree raises its :class:`SpecError`."""
        if self.registry is None:
            raise self.spec_error or SpecError(self.specs_dir, "the specs were not loaded")
        return self.registry


def parse_agent_options(values: dict[str, Any]) -> AgentOptions:
    """The agent options given (``None``: not given), validated; errors name the option."""
    from pydantic import ValidationError

    from limbo_plugin.agents.options import AgentOptions

    try:
        return AgentOptions.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        flag = AGENT_OPTION_FLAGS.get(str(error["loc"][0]), str(error["loc"][0]))
        raise UsageError(f"{flag}: {error['msg'].lower()}, got {error['input']!r}") from None


def _shard(raw: str) -> Shard:
    from limbo_plugin.sharding import Shard

    return Shard.parse(raw)


def _positive_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} expects a number, got {raw!r}") from None
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {raw!r}")
    return value


def _resolve(root: Path, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else root / candidate


def pytest_configure(config: pytest.Config) -> None:
    try:
        state = LimboState(config)
    except (UsageError, SpecError) as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = state
    from limbo_plugin.report.outcomes import iter_outcomes, read_outcomes
    from limbo_plugin.report.records import CostMeter, RecordWriter, rotate

    if state.baseline_path is not None and not state.is_worker:
        # Read before the record file is rotated: the baseline may be the file this run replaces.
        state.baseline = read_outcomes(state.baseline_path)
    if state.resume:
        for outcome in iter_outcomes(state.records_path):
            if outcome.error is None:
                state.done.add(outcome.identity)
                if not state.is_worker:
                    state.previous[outcome.identity] = outcome
    elif not state.is_worker and not config.option.collectonly and state.collects_specs:
        rotate(state.records_path)
    if state.only_specs:
        lean_spec_run(config)
    if not state.is_worker:
        state.writer = RecordWriter(state.records_path)
        config.pluginmanager.register(LimboController(state), "limbo-controller")
        sync_on_sigterm(state)
    if state.cost_limit is not None:
        state.cost_meter = CostMeter(state.records_path)


def _targets(config: pytest.Config) -> list[Path]:
    base = Path(config.invocation_params.dir)
    return [(base / arg.split("::")[0]).resolve() for arg in config.args]


def collects_specs(config: pytest.Config, specs_dir: Path) -> bool:
    """Whether this invocation collects experiments (``pytest tests`` must not touch reports/)."""
    return any(target == specs_dir or specs_dir in target.parents or target in specs_dir.parents
               for target in _targets(config))


def collects_only_specs(config: pytest.Config, specs_dir: Path) -> bool:
    """Whether every path this invocation collects lies in the specs (no Python tests)."""
    targets = _targets(config)
    return bool(targets) and all(t == specs_dir or specs_dir in t.parents for t in targets)


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


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.writer is not None:
        state.writer.close()
    if (state.sigterm_handler is not None
            and signal.getsignal(signal.SIGTERM) is state.sigterm_handler):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- collection ----------------------------------------------------------------------------------
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    state = config.stash.get(STATE, None)
    if state is None or file_path.suffix not in (".yaml", ".yml"):
        return None
    if file_path.parent.name != "experiments":
        return None
    named = any(Path(arg.split("::")[0]).resolve() == file_path.resolve()
                for arg in config.args if arg.endswith((".yaml", ".yml")) or "::" in arg)
    if not named and file_path.stem != state.experiment:
        return None
    return ExperimentFile.from_parent(parent, path=file_path)


class ExperimentFile(pytest.File):
    """One experiment spec: its items are its episodes."""

    def collect(self) -> Any:
        try:
            yield from self._episodes()
        except SpecError as exc:
            # One bad spec is one failing item, not a dead session: the rest of the run goes on.
            yield BrokenSpecItem.from_parent(self, name=f"spec-error[{Path(exc.file).name}]",
                                             error=exc)

    def _episodes(self) -> Iterator[EpisodeItem]:
        from limbo_plugin.experiments import (
            compares_agents,
            episode_labels,
            item_name,
            load_experiment,
        )

        state: LimboState = self.config.stash[STATE]
        registry = state.specs
        experiment = load_experiment(self.path, registry)
        episodes = experiment.episodes(registry, state.overrides, state.defaults)
        many_agents = compares_agents(episodes)
        model_options = {**experiment.spec.model_options, **state.model_options}
        marks: dict[str | None, pytest.MarkDecorator] = {}  # one mark object per kind, shared
        for episode in episodes:
            labels = episode_labels(episode, registry)
            item = EpisodeItem.from_parent(self, name=item_name(episode, with_agent=many_agents),
                                           episode=episode, model_options=model_options,
                                           labels=labels)
            if labels.xfail_reason:
                reason = labels.xfail_reason
                if reason not in marks:
                    marks[reason] = pytest.mark.xfail(reason=reason, strict=False,
                                                      raises=EpisodeFailure)
                item.add_marker(marks[reason])
            for marker in labels.markers:
                if marker not in marks:
                    marks[marker] = getattr(pytest.mark, marker)
                item.add_marker(marks[marker])
            item.extra_keyword_matches.update(labels.keywords)
            yield item


class BrokenSpecItem(pytest.Item):
    """Stands for a spec that failed to load; it errors with the file, line, path and problem."""

    def __init__(self, *, error: SpecError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def setup(self) -> None:
        raise self.error

    def runtest(self) -> None:  # pragma: no cover - setup always raises
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, LimboError):
            return f"Limbo could not load a spec:\n{excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        line = None if self.error.line is None else self.error.line - 1
        return Path(self.error.file), line, f"spec error in {Path(self.error.file).name}"


class EpisodeFailure(AssertionError):
    """The episode was not exactly-once, or the agent overclaimed.

    An ``AssertionError`` so that reporters that tell failed from broken tests (Allure) call an
    episode that duplicated *failed*: the agent under test did the wrong thing, not the harness.
    """


class InfrastructureFailure(Exception):
    """The agent could not run (provider errors); the episode is excluded and re-run on resume."""


class EpisodeItem(pytest.Item):
    """One episode. It runs in setup, so an infrastructure error is reported as an error."""

    def __init__(self, *, episode: Episode, model_options: dict[str, Any],
                 labels: EpisodeLabels, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.episode = episode
        self.model_options = model_options
        self.spec_file, self.spec_line = labels.spec_file, labels.spec_line  # for reportinfo
        self.record: EpisodeRecord | None = None
        self.record_line: str | None = None

    def skip(self, reason: SkipReason, message: str) -> None:
        self.user_properties.append((SKIP_PROPERTY, reason.value))
        pytest.skip(message)

    def setup(self) -> None:
        from limbo_plugin.episode import run_episode

        state: LimboState = self.config.stash[STATE]
        fingerprint = (self.episode.key.id, self.episode.config.fingerprint())
        if fingerprint in state.done:
            self.skip(SkipReason.RESUMED, "already recorded (--limbo-resume)")
        if state.cost_meter is not None and state.cost_meter.refresh() >= (state.cost_limit or 0):
            self.skip(SkipReason.COST_LIMIT,
                      f"cost limit of ${state.cost_limit} reached; not starting new episodes")
        options = state.agent_options.model_copy(update={"model_options": self.model_options})
        record = run_episode(self.episode.key, self.episode.config,
                             registry=state.specs, agent_options=options)
        self.record = record
        self.record_line = record.model_dump_json()
        if record.error is not None:
            raise InfrastructureFailure(record.error)

    def runtest(self) -> None:
        from limbo_plugin.report import allure as allure_report

        record = self.record
        if record is None:
            return
        if allure_report.enabled(self.config):  # in the call phase: allure owns setup's result
            allure_report.describe(record)
            allure_report.attach(record)
        if not record.passed:
            raise EpisodeFailure(record.failure_message())

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, EpisodeFailure | InfrastructureFailure | LimboError):
            return str(excinfo.value)  # e.g. a harness agent without --model-option api_base
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        line = None if self.spec_line is None else self.spec_line - 1
        return Path(self.spec_file or self.path), line, f"episode {self.name}"

    def hand_over(self, report: pytest.TestReport) -> None:
        """Put the record's line on the teardown report and let go of the record: an item
        lives to the end of the session, its record only until it is reported."""
        if self.record_line is not None:
            setattr(report, RECORD_ATTRIBUTE, self.record_line)
        self.record = None
        self.record_line = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if call.when == "teardown" and isinstance(item, EpisodeItem):
        item.hand_over(report)
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
    state.selected = {(i.episode.key.id, i.episode.config.fingerprint()) for i in items
                      if isinstance(i, EpisodeItem)}


def keep_shard(config: pytest.Config, state: LimboState, items: list[pytest.Item]) -> None:
    """Deselect the episodes of other shards (other items, e.g. a broken spec's, stay)."""
    from limbo_plugin.sharding import shard_of_each

    assert state.shard is not None
    episodes = [item for item in items if isinstance(item, EpisodeItem)]
    if not episodes:
        return
    shards = shard_of_each([item.episode for item in episodes], state.specs, state.shard.count)
    elsewhere = {id(item) for item, shard in zip(episodes, shards, strict=True)
                 if shard != state.shard.index}
    if elsewhere:
        config.hook.pytest_deselected(items=[i for i in items if id(i) in elsewhere])
        items[:] = [i for i in items if id(i) not in elsewhere]


def all_outcomes(state: LimboState) -> list[Outcome]:
    """This run's episodes plus, on resume, the earlier ones of the selected episodes."""
    merged = {k: v for k, v in state.previous.items() if not state.selected or
              k in state.selected}
    merged.update(state.outcomes)
    return list(merged.values())


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
        if Path(report.nodeid.split("::", 1)[0]).parent.name != "experiments":
            return
        if self._terminal_stats is None:
            reporter = self.state.config.pluginmanager.get_plugin("terminalreporter")
            self._terminal_stats = getattr(reporter, "stats", None) or {}
        kept = self._terminal_stats.get("")
        if kept and kept[-1] is report:
            kept.pop()

    def take_record(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        line = report.__dict__.pop(RECORD_ATTRIBUTE, None)
        if line is not None and self.state.writer is not None:
            from limbo_plugin.report.outcomes import Outcome

            self.state.writer.write(line)
            outcome = Outcome.from_json(line)
            self.state.outcomes[outcome.identity] = outcome
        for name, value in report.user_properties:
            if name == SKIP_PROPERTY:
                reason = SkipReason(str(value))
                self.state.skips[reason] = self.state.skips.get(reason, 0) + 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Before the first episode: every selected agent can run on this machine (a harness
        CLI is installed). Under xdist the controller has no items; it checks the workers'
        collection instead (below)."""
        if session.config.option.collectonly or session.config.pluginmanager.has_plugin(
                "dsession"):
            return
        require_ready({i.episode.config.agent for i in session.items
                       if isinstance(i, EpisodeItem)})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.checked_agents or self.state.registry is None:
            return  # checked once; a broken spec tree is reported by its error item
        self.checked_agents = True
        from limbo_plugin.experiments import agents_of_items

        root = Path(str(self.state.config.rootpath))
        require_ready(agents_of_items(ids, root, self.state.registry, self.state.overrides,
                                      self.state.defaults))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.state.gate_path is not None:
            apply_gate(session, self.state, self.state.gate_path, exitstatus)

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int,
                                config: pytest.Config) -> None:
        print_summary(terminalreporter, self.state)


def require_ready(agents: set[str]) -> None:
    """Stop the run, before any episode, with one line if an agent cannot run here."""
    from limbo_plugin.agents.registry import check_ready

    try:
        check_ready(agents)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None


def apply_gate(session: pytest.Session, state: LimboState, gate_path: Path,
               exitstatus: int) -> None:
    from limbo_plugin.report.gate import load_gate, run_gate, unreadable_gate

    try:
        gate = load_gate(gate_path)
    except SpecError as exc:
        result = unreadable_gate(gate_path, exc)
    else:
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


def print_summary(terminalreporter: Any, state: LimboState) -> None:
    records = all_outcomes(state)
    if not records:
        return
    from limbo_plugin.report.aggregate import summarize
    from limbo_plugin.report.summary import render_text, write_summary

    summary = summarize(records, family_order=state.family_order)
    terminalreporter.section("Limbo summary")
    for line in render_text(summary):
        terminalreporter.write_line(line)
    json_path, md_path = write_summary(summary, state.records_path.parent)
    terminalreporter.write_line(f"Records: {state.records_path} ({len(state.outcomes)} new "
                                f"this run). Summary: {json_path}, {md_path}")
    skipped_for_cost = state.skips.get(SkipReason.COST_LIMIT, 0)
    if skipped_for_cost:
        terminalreporter.write_line(f"Cost limit of ${state.cost_limit} reached: "
                                    f"{skipped_for_cost} episode(s) were not started.",
                                    yellow=True)
    if state.gate_result is not None:
        terminalreporter.section("Limbo gate")
        for i, line in enumerate(state.gate_result.lines()):
            color = {"green": True} if state.gate_result.passed else {"red": True}
            terminalreporter.write_line(line, **(color if i == 0 else {}))
