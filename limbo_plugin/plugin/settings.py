"""What a session was asked to do, and what happens to it.

:func:`settings_from` reads every option once into a frozen :class:`Settings` (a bad value is a
:class:`UsageError` naming the option, before anything moves); it changes nothing, so the
hooks decide what to do with the answer. :class:`Specs` loads the spec tree once, and
:class:`RunState` is the little that changes while the run goes: the records taken, the
skips counted, the notices to print. :class:`Limbo` holds the three for the hooks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.discovery import given_limbo_options, names_experiments, redirects_collection
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.plugin.options import VALUED, flag_of_agent_field, ini_value, option
from limbo_plugin.records import RUN_FIELDS

if TYPE_CHECKING:
    from limbo_plugin.agents.options import AgentOptions
    from limbo_plugin.plugin.items import SkipReason
    from limbo_plugin.report.gate import GateResult, GateSpec
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.sampling import Sample
    from limbo_plugin.sharding import Shard
    from limbo_plugin.spec.registry import SpecRegistry
    from limbo_plugin.store.custody import RecordsLock
    from limbo_plugin.store.files import CostMeter, RecordWriter
    from limbo_plugin.store.view import EpisodeView

Identity = tuple[str, str, int]
"""An episode's identity in the records: its id, its configuration's fingerprint, its repeat."""


@dataclass(frozen=True)
class Settings:
    """The session's options, each validated once."""

    root: Path
    specs_dir: Path
    specs_given: bool
    """``--limbo-specs`` (or ``limbo_specs``) was given: its experiments alone are collected."""
    limbo_options: tuple[str, ...]
    """The Limbo options given, as flags (for the hint when nothing was collected)."""
    redirected: bool
    """Collection is pointed at :attr:`specs_dir` (``limbo_plugin.discovery``)."""
    experiment: str
    collects_specs: bool
    """This invocation collects experiments (``pytest tests`` must not touch reports/)."""
    only_specs: bool
    """Every path it collects lies in the specs (no Python tests)."""
    active: bool
    """Limbo takes part in this run; otherwise it creates, writes and prints nothing (another
    project's tests in the same environment)."""
    is_worker: bool
    records_path: Path
    gate_path: Path | None
    baseline_option: str | None
    resume: bool
    overrides: Mapping[str, str | None]
    """The run-configuration options given (``None``: not given), checked by :class:`Specs`."""
    model_options: Mapping[str, Any]
    shard: Shard | None
    sample: Sample | None
    cost_limit: float | None
    episode_timeout: float | None
    repeat: int
    progress: str | None
    preflight: bool
    """Send one real request to each model endpoint before the first episode."""
    max_errors: int
    """Stop after this many consecutive infrastructure errors (0: never)."""
    step_summary: bool
    """Append the verdict and the family table to ``$GITHUB_STEP_SUMMARY`` when it is set."""
    agent_options: AgentOptions


def _experiment_option(value: str | None) -> str:
    """``--experiment``: ``default`` when not given; an empty name is a usage error, not the
    default experiment run in its place."""
    if value is None:
        return "default"
    if not value.strip():
        raise pytest.UsageError(f"--experiment {value!r}: name an experiment (default, smoke, "
                                "e1 … e6; the files under specs/experiments/)")
    return value


def _specs_option(value: str) -> Path:
    """``--limbo-specs`` resolved; a symbolic link loop is a usage error naming it."""
    try:
        return Path(value).resolve(strict=False)
    except (RuntimeError, OSError):
        raise pytest.UsageError(f"--limbo-specs {value}: a symbolic link loop; give the "
                                "directory that holds services/, faults/ and tasks/") from None


def settings_from(config: pytest.Config) -> Settings:
    """Read and check every option of ``config``; nothing is changed."""
    from limbo_plugin.agents.options import parse_model_options
    from limbo_plugin.plugin.progress import parse_interval
    from limbo_plugin.spec.registry import default_specs_dir

    root = Path(str(config.rootpath))
    specs = option(config, "limbo_specs")
    candidate = root / "specs"
    specs_dir = _specs_option(specs) if specs else (
        candidate if (candidate / "services").is_dir() else default_specs_dir())
    limbo_options = given_limbo_options(config, ((opt.name, opt.flag) for opt in VALUED))
    redirected = redirects_collection(config, specs_option=bool(specs),
                                      limbo_options=bool(limbo_options))
    args = [str(specs_dir)] if redirected else list(config.args)
    collects = collects_specs(config, args, specs_dir)
    records_path = _resolve(root, option(config, "limbo_records") or "")
    gate = option(config, "limbo_gate")
    model_options = parse_model_options(config.getoption("limbo_model_options") or [])
    shard = option(config, "limbo_shard")
    sample = option(config, "limbo_sample")
    cost = option(config, "limbo_cost_limit")
    progress = option(config, "limbo_progress")
    settings = Settings(
        root=root, specs_dir=specs_dir, specs_given=bool(specs),
        limbo_options=tuple(limbo_options), redirected=redirected,
        experiment=_experiment_option(option(config, "experiment")),
        collects_specs=collects, only_specs=collects_only_specs(config, args, specs_dir),
        active=collects or bool(limbo_options) or names_experiments(config),
        is_worker=hasattr(config, "workerinput"),
        records_path=records_path,
        gate_path=_resolve(root, gate) if gate else None,
        baseline_option=option(config, "limbo_baseline"),
        resume=bool(config.getoption("limbo_resume") or ini_value(config, "limbo_resume")),
        overrides={name: option(config, name) for name in RUN_FIELDS},
        model_options=model_options,
        shard=_shard(shard) if shard else None,
        sample=_sample(sample) if sample else None,
        cost_limit=_positive_float("--limbo-cost-limit", cost) if cost else None,
        episode_timeout=_time_limit(option(config, "limbo_episode_timeout")),
        repeat=_whole_number("--limbo-repeat", option(config, "limbo_repeat"), default=1,
                             low=1, high=1000, means=" of runs"),
        progress=progress,
        preflight=_switch("--limbo-preflight", option(config, "limbo_preflight") or "on"),
        max_errors=_whole_number("--limbo-max-errors", option(config, "limbo_max_errors"),
                                 default=DEFAULT_MAX_ERRORS, low=0, high=1_000_000,
                                 means=" (0: never)"),
        step_summary=_switch("--limbo-step-summary",
                             option(config, "limbo_step_summary") or "on"),
        agent_options=parse_agent_options({
            **{opt.agent_field: option(config, opt.name) for opt in VALUED
               if opt.agent_field is not None},
            "model_options": model_options,
            "reports_dir": str(records_path.parent),  # harness transcripts go here
        }),
    )
    parse_interval(progress, tty=False)  # checked now, before anything moves
    return settings


class Specs:
    """The session's spec tree, loaded and checked once: at configuration in a run that
    collects experiments, else on first use (``pytest tests`` loads nothing it does not need).
    A broken tree is kept as :attr:`error` and reported by collection, with its file and line;
    the run-configuration options are checked against the tree (:attr:`defaults`)."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.loaded = False
        self.error: SpecError | None = None
        self._registry: SpecRegistry | None = None
        self._defaults: RunConfig | None = None

    def load(self) -> None:
        """Load and check the spec tree once; a broken one is kept as :attr:`error`."""
        from limbo_plugin.experiments import find_experiment
        from limbo_plugin.spec.registry import SpecRegistry

        if self.loaded:
            return
        self.loaded = True
        try:
            self._registry = SpecRegistry.load(self.settings.specs_dir)
        except SpecError as exc:
            # A broken spec is reported by collection as one failing item (with its file and
            # line), not as a dead session: ``pytest tests`` must still run.
            self.error = exc
            return
        find_experiment(self.settings.experiment, self._registry)
        for name, description in self._registry.fault_markers().items():
            self.config.addinivalue_line("markers", f"{name}: Limbo episodes: {description}")

    def check_options(self) -> None:
        """The run-configuration options against the loaded specs (a :class:`UsageError`)."""
        self._defaults = self._run_defaults()

    def _run_defaults(self) -> RunConfig:
        from limbo_plugin.runconfig import RunConfig

        given = {name: value for name, value in self.settings.overrides.items()
                 if value is not None}
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
        if not self.loaded:
            try:
                self.load()
            except UsageError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._registry

    @property
    def family_order(self) -> tuple[str, ...]:
        """The order of report rows: the fault spec's (none if the specs did not load)."""
        return self.registry.family_order if self.registry is not None else ()

    @property
    def loaded_registry(self) -> SpecRegistry:
        """The spec registry; a broken spec tree raises its :class:`SpecError`."""
        if self.registry is None:
            raise self.error or SpecError(self.settings.specs_dir, "the specs were not loaded")
        return self.registry


@dataclass
class RunState:
    """What changes while the run goes (on the controller, mostly)."""

    run_id: str
    notices: list[str] = field(default_factory=list)
    """What the user must know before the run (records moved, a torn line repaired)."""
    late_notices: list[str] = field(default_factory=list)
    """What went wrong during the run that the user must know (printed at its end)."""
    writer: RecordWriter | None = None
    records_lock: RecordsLock | None = None
    rotated_to: Path | None = None
    write_failed: bool = False
    """The records file could not take a line (a full disk): nothing more is written."""
    cost_meter: CostMeter | None = None
    gate: GateSpec | None = None
    gate_result: GateResult | None = None
    baseline_path: Path | None = None
    baseline: list[EpisodeView] = field(default_factory=list)
    done: set[Identity] = field(default_factory=set)
    """On resume: the episodes already recorded without an error (not run again)."""
    previous: dict[Identity, EpisodeView] = field(default_factory=dict)
    outcomes: dict[Identity, EpisodeView] = field(default_factory=dict)
    """This run's episodes, one slim row each (the JSONL file holds the records)."""
    selected: set[Identity] = field(default_factory=set)
    deselected_episodes: int = 0
    keyword_selected_nothing: bool = False
    """``-k`` left no episode to run (``-k late_comit``); the summary suggests names."""
    skips: dict[SkipReason, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    stopped_early: bool = False
    consecutive_errors: int = 0
    """Infrastructure errors in a row, as the episodes are reported (``--limbo-max-errors``)."""
    stopped_for_errors: str | None = None
    """Why the run stopped before its end on infrastructure errors (the preflight, or
    ``--limbo-max-errors``): its exit status is then the infrastructure one."""
    sigterm_handler: Any = None

    def remember_done(self, outcomes: list[EpisodeView], *, keep: bool) -> None:
        """On resume: the episodes already recorded without an error are not run again (and,
        with ``keep``, on the controller, count in the summary)."""
        for outcome in outcomes:
            if outcome.error is None:
                self.done.add(outcome.identity)
                if keep:
                    self.previous[outcome.identity] = outcome

    def all_outcomes(self) -> list[EpisodeView]:
        """This run's episodes plus, on resume, the earlier ones of the selected episodes."""
        merged = {k: v for k, v in self.previous.items() if not self.selected or
                  k in self.selected}
        merged.update(self.outcomes)
        return list(merged.values())


@dataclass(frozen=True)
class Limbo:
    """The session's part in a pytest run (in ``config.stash[STATE]``)."""

    config: pytest.Config
    settings: Settings
    specs: Specs
    run: RunState


STATE = pytest.StashKey[Limbo]()


def start(config: pytest.Config) -> Limbo:
    """The session's settings, run state and specs; in a run that collects experiments the
    specs are loaded and the options checked against them now, before the first episode."""
    settings = settings_from(config)
    specs = Specs(config, settings)
    if settings.collects_specs:
        specs.load()
        specs.check_options()
    worker_run_id = (str(config.workerinput.get("limbo_run_id") or "")  # type: ignore[attr-defined]
                     if settings.is_worker else "")
    return Limbo(config, settings, specs, RunState(run_id=worker_run_id or new_run_id()))


def new_run_id() -> str:
    """A sortable, readable id for one pytest session: its UTC start and a random suffix."""
    import uuid
    from datetime import UTC, datetime

    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def parse_agent_options(values: dict[str, Any]) -> AgentOptions:
    """The agent options given (``None``: not given), validated; errors name the option."""
    from pydantic import ValidationError

    from limbo_plugin.agents.options import AgentOptions

    try:
        return AgentOptions.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        flag = flag_of_agent_field(str(error["loc"][0]))
        raise UsageError(f"{flag}: {error['msg'].lower()}, got {error['input']!r}") from None


def _shard(raw: str) -> Shard:
    from limbo_plugin.sharding import Shard

    return Shard.parse(raw)


def _sample(raw: str) -> Sample:
    from limbo_plugin.sampling import Sample

    return Sample.parse(raw)


def _positive_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} expects a number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be a positive number, got {raw!r}")
    return value


DEFAULT_MAX_ERRORS = 5
"""``--limbo-max-errors``: consecutive infrastructure errors that stop the run."""


def _switch(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("on", "off"):
        raise UsageError(f"{name} expects on or off, got {raw!r}")
    return value == "on"


def _whole_number(name: str, raw: str | None, *, default: int, low: int, high: int,
                  means: str) -> int:
    """A whole-number option between ``low`` and ``high``; ``means`` says what it counts, in
    the one-line error (``--limbo-repeat expects a whole number of runs, got 'x'``)."""
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"{name} expects a whole number{means}, got {raw!r}") from None
    if not low <= value <= high:
        raise UsageError(f"{name} must be between {low} and {high}, got {raw!r}")
    return value


def _time_limit(raw: str | None) -> float | None:
    """``--limbo-episode-timeout``: seconds (default 1800), or 0 for no limit."""
    from limbo_plugin.agents.deadline import DEFAULT_EPISODE_TIMEOUT_S

    if raw is None:
        return DEFAULT_EPISODE_TIMEOUT_S
    from limbo_plugin.agents.deadline import MAX_EPISODE_TIMEOUT_S

    if raw.strip() in ("0", "0.0"):
        return None
    seconds = _positive_float("--limbo-episode-timeout", raw)
    if seconds > MAX_EPISODE_TIMEOUT_S:
        raise UsageError(f"--limbo-episode-timeout: at most {MAX_EPISODE_TIMEOUT_S:g} s (a "
                         f"week), or 0 for no limit; got {raw!r}")
    return seconds


def _resolve(root: Path, path: str) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() else root / candidate


def _targets(config: pytest.Config, args: list[str]) -> list[Path]:
    base = Path(config.invocation_params.dir)
    return [(base / arg.split("::")[0]).resolve() for arg in args]


def collects_specs(config: pytest.Config, args: list[str], specs_dir: Path) -> bool:
    """Whether collecting ``args`` collects experiments."""
    return any(target == specs_dir or specs_dir in target.parents or target in specs_dir.parents
               for target in _targets(config, args))


def collects_only_specs(config: pytest.Config, args: list[str], specs_dir: Path) -> bool:
    """Whether every path in ``args`` lies in the specs (no Python tests)."""
    targets = _targets(config, args)
    return bool(targets) and all(t == specs_dir or specs_dir in t.parents for t in targets)
