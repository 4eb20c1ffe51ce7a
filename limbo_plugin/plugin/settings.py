"""What a session was asked to do: the options, read and validated once, and the specs."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.discovery import given_limbo_options, names_experiments, redirect_collection
from limbo_plugin.errors import SpecError, UsageError
from limbo_plugin.plugin.options import VALUED, flag_of_agent_field, option
from limbo_plugin.records import RUN_FIELDS

if TYPE_CHECKING:
    from limbo_plugin.agents.options import AgentOptions
    from limbo_plugin.plugin.items import SkipReason
    from limbo_plugin.report.custody import RecordsLock
    from limbo_plugin.report.gate import GateResult, GateSpec
    from limbo_plugin.report.outcomes import Outcome
    from limbo_plugin.report.record_files import CostMeter, RecordWriter
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.sharding import Shard
    from limbo_plugin.spec.registry import SpecRegistry


PREVIOUS = "previous"
"""``--limbo-baseline previous``: the records this run is about to replace."""


STATE = pytest.StashKey["LimboState"]()


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
        # What the run collects, and whether Limbo takes part at all (limbo_plugin.discovery).
        self.limbo_options = given_limbo_options(
            config, ((opt.name, opt.flag) for opt in VALUED))
        self.redirected = redirect_collection(config, self.specs_dir, specs_option=bool(specs),
                                              limbo_options=bool(self.limbo_options))
        self._registry: SpecRegistry | None = None
        self.spec_error: SpecError | None = None
        self.specs_loaded = False
        self.experiment = option(config, "experiment") or "default"
        self.collects_specs = collects_specs(config, self.specs_dir)
        self.only_specs = collects_only_specs(config, self.specs_dir)
        self.active = (self.collects_specs or bool(self.limbo_options)
                       or names_experiments(config))
        """Whether Limbo takes part in this run; otherwise it creates, writes and prints
        nothing (another project's tests in the same environment)."""
        self.sigterm_handler: Any = None
        if self.collects_specs:
            # Validated now, before the first episode; a run that collects no specs (``pytest
            # tests``) loads them only if something asks (see :attr:`registry`).
            self.load_specs()
        self.root = root
        self.records_path = _resolve(root, option(config, "limbo_records") or "")
        gate = option(config, "limbo_gate")
        self.gate_path = _resolve(root, gate) if gate else None
        self.gate: GateSpec | None = None
        self.baseline_option = option(config, "limbo_baseline")
        self.baseline_path: Path | None = None
        self.resume = bool(config.getoption("limbo_resume") or config.getini("limbo_resume"))
        self.is_worker = hasattr(config, "workerinput")
        self.run_id = (str(config.workerinput.get("limbo_run_id") or "")  # type: ignore[attr-defined]
                       if self.is_worker else "") or new_run_id()
        self.notices: list[str] = []
        """What the user must know before the run (records moved, a torn line repaired)."""
        self.rotated_to: Path | None = None
        self.records_lock: RecordsLock | None = None
        self.write_failed = False
        self.late_notices: list[str] = []
        """What went wrong during the run that the user must know (printed at its end)."""
        """The records file could not take a line (a full disk): nothing more is written."""
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
        self.episode_timeout = _time_limit(option(config, "limbo_episode_timeout"))
        self.repeat = _repeat(option(config, "limbo_repeat"))
        from limbo_plugin.report.progress import parse_interval

        parse_interval(option(config, "limbo_progress"), tty=False)  # before anything moves
        self.agent_options = parse_agent_options({
            "model_options": self.model_options,
            "cassette": option(config, "limbo_cassette"),
            "cassette_mode": option(config, "limbo_cassette_mode"),
            "provider_retries": option(config, "limbo_provider_retries"),
            "provider_backoff_s": option(config, "limbo_provider_backoff"),
            "reports_dir": str(self.records_path.parent),  # harness transcripts go here
        })
        self._options_for: tuple[dict[str, Any], AgentOptions] | None = None
        self.done: set[tuple[str, str, int]] = set()
        self.previous: dict[tuple[str, str, int], Outcome] = {}
        self.outcomes: dict[tuple[str, str, int], Outcome] = {}
        """This run's episodes, one slim row each (the JSONL file holds the records)."""
        self.writer: RecordWriter | None = None
        self.cost_meter: CostMeter | None = None
        self.gate_result: GateResult | None = None
        self.skips: dict[SkipReason, int] = {}
        self.started = time.monotonic()
        self.selected: set[tuple[str, str, int]] = set()
        self.baseline: list[Outcome] = []
        self.stopped_early = False

    def options_with(self, model_options: dict[str, Any]) -> AgentOptions:
        """The agent options with an experiment's model options: one copy per experiment file
        (its items share one ``model_options`` dict), not one per episode."""
        cached = self._options_for
        if cached is None or cached[0] is not model_options:
            options = self.agent_options.model_copy(update={"model_options": model_options})
            cached = self._options_for = (model_options, options)
        return cached[1]

    def remember_done(self, outcomes: list[Outcome]) -> None:
        """On resume: the episodes already recorded without an error are not run again."""
        for outcome in outcomes:
            if outcome.error is None:
                self.done.add(outcome.identity)
                if not self.is_worker:
                    self.previous[outcome.identity] = outcome

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


def _positive_float(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name} expects a number, got {raw!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name} must be a positive number, got {raw!r}")
    return value


def _repeat(raw: str | None) -> int:
    """``--limbo-repeat K``: how many runs of each episode (default 1)."""
    if raw is None:
        return 1
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(f"--limbo-repeat expects a whole number of runs, got {raw!r}") from None
    if not 1 <= value <= 1000:
        raise UsageError(f"--limbo-repeat must be between 1 and 1000, got {raw!r}")
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


def all_outcomes(state: LimboState) -> list[Outcome]:
    """This run's episodes plus, on resume, the earlier ones of the selected episodes."""
    merged = {k: v for k, v in state.previous.items() if not state.selected or
              k in state.selected}
    merged.update(state.outcomes)
    return list(merged.values())
