"""Collection: an experiment spec becomes one pytest item per episode (a broken spec, one
collection error), and each item runs its episode and hands its record to the controller."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from limbo_plugin.errors import LimboError, SpecError
from limbo_plugin.plugin.settings import STATE, Limbo

if TYPE_CHECKING:
    from limbo_plugin.agents.options import AgentOptions
    from limbo_plugin.experiments import Episode, EpisodeLabels, Experiment
    from limbo_plugin.records import EpisodeRecord


RECORD_ATTRIBUTE = "limbo_record"
"""The report that shows an episode's outcome (the call report, or the setup report of an
episode that could not run) carries its record's JSON line under this attribute, so the line is
written before the terminal prints the outcome: a run killed in between never shows an episode
as finished that its records lack. It travels from an xdist worker to the controller once, and
the controller takes it off the report (which pytest keeps to the end of the run) as it writes
the line."""


VIEW_ATTRIBUTE = "limbo_view"
"""In a run without workers, the same report also carries the record's
:class:`~limbo_plugin.store.view.EpisodeView`, built from the record object, so the controller
does not parse the line it is about to write (a worker's report carries the line alone)."""

SKIP_PROPERTY = "limbo_skip"


class SkipReason(enum.StrEnum):
    """Why an episode was not started; it travels with the item's reports (``user_properties``),
    so the controller counts skips by reason, under xdist too, without reading their text."""

    RESUMED = "resumed"
    COST_LIMIT = "cost_limit"


class ExperimentFile(pytest.File):
    """One experiment spec: its items are its episodes."""

    def collect(self) -> Any:
        from limbo_plugin.experiments import load_experiment

        limbo: Limbo = self.config.stash[STATE]
        try:
            registry = limbo.specs.loaded_registry
            experiment = load_experiment(self.path, registry)
            broken = experiment.broken_templates(registry)
            episodes = list(self._episodes(experiment))
            if not episodes and not broken:
                raise experiment.selects_nothing(registry)
        except SpecError as exc:
            # A broken spec tree or experiment: one collection error, and nothing to run.
            yield BrokenSpec.from_parent(self, name=BrokenSpec.name_for(exc), error=exc)
            return
        # A broken template costs its own episodes only: it is one collection error, as
        # pytest reports a broken test module, and the other templates' episodes run.
        for error in broken:
            yield BrokenSpec.from_parent(self, name=BrokenSpec.name_for(error), error=error)
        yield from episodes

    def _episodes(self, experiment: Experiment) -> Iterator[EpisodeItem]:
        from limbo_plugin.experiments import episode_labels

        limbo: Limbo = self.config.stash[STATE]
        settings, registry, defaults = limbo.settings, limbo.specs.loaded_registry, \
            limbo.specs.defaults
        episodes = experiment.episodes(registry, settings.overrides, defaults,
                                       repeat=settings.repeat)
        arms = experiment.arms(registry, settings.overrides, defaults)
        model_options = {**experiment.spec.model_options, **settings.model_options}
        # One copy of the agent options per experiment file (its items share it).
        options = settings.agent_options.model_copy(update={"model_options": model_options})
        marks: dict[str | None, pytest.MarkDecorator] = {}  # one mark object per kind, shared
        gated = settings.gate_path is not None
        for episode in episodes:
            labels = episode_labels(episode, registry)
            item = EpisodeItem.from_parent(self, name=episode.id, episode=episode,
                                           model_options=model_options, agent_options=options,
                                           labels=labels)
            item.experiment = experiment.name
            item.arm = arms.get((episode.key, episode.config))
            if labels.xfail_reason and not gated:  # with a gate, no episode fails the run
                reason = labels.xfail_reason
                if reason not in marks:
                    marks[reason] = pytest.mark.xfail(reason=reason, strict=False,
                                                      raises=EpisodeFailure)
                item.add_marker(marks[reason])
            for marker in labels.markers:
                if marker not in marks:
                    marks[marker] = getattr(pytest.mark, marker)
                item.add_marker(marks[marker])
            yield item


class BrokenSpec(pytest.Collector):
    """A spec that failed to load, reported as pytest reports a test module that does not
    import: a collection error (also under ``--collect-only``) whose text is the one line
    ``file:line: at path problem``, without a traceback. Only the episodes that need the
    spec are lost (see :func:`pytest_collection_finish`)."""

    def __init__(self, *, error: SpecError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    @staticmethod
    def name_for(error: SpecError) -> str:
        return f"spec-error[{Path(error.file).name}]"

    def collect(self) -> list[pytest.Item]:
        raise self.error

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        if isinstance(excinfo.value, SpecError):
            return f"Limbo could not load a spec: {excinfo.value.render(self.config.rootpath)}"
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path | str, int | None, str]:
        line = None if self.error.line is None else self.error.line - 1
        return Path(self.error.file), line, f"spec error in {Path(self.error.file).name}"


class SpecErrorPolicy:
    """A broken spec must not cancel the episodes that do not need it: when every collection
    error is a spec error, the run goes on as with ``--continue-on-collection-errors`` (the
    errors are still reported and still fail the run); any other collection error stops it as
    pytest always does. Registered in every process (xdist workers collect)."""

    def __init__(self) -> None:
        self.spec_errors = 0
        self.other_errors = 0

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            if report.nodeid.rpartition("::")[2].startswith("spec-error["):
                self.spec_errors += 1
            else:
                self.other_errors += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.spec_errors and not self.other_errors:
            session.config.option.continue_on_collection_errors = True


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
                 agent_options: AgentOptions, labels: EpisodeLabels, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.episode = episode
        self.model_options = model_options
        self.agent_options = agent_options
        self.spec_file, self.spec_line = labels.spec_file, labels.spec_line  # for reportinfo
        self.record: EpisodeRecord | None = None
        self.record_line: str | None = None
        self.experiment: str | None = None
        self.arm: str | None = None
        self.labels_keywords = tuple(labels.keywords)
        """What ``-k`` matches besides the name (:meth:`listextrakeywords`). A tuple: nearly
        every episode has its own, and a run keeps them all; a set per item
        (``extra_keyword_matches``) took four times the memory."""

    def skip(self, reason: SkipReason, message: str) -> None:
        self.user_properties.append((SKIP_PROPERTY, reason.value))
        pytest.skip(message)

    def setup(self) -> None:
        from limbo_plugin.episode import run_episode
        from limbo_plugin.records import RunContext, record_line

        limbo: Limbo = self.config.stash[STATE]
        run, cost_limit = limbo.run, limbo.settings.cost_limit
        fingerprint = (self.episode.key.id, self.episode.config.fingerprint(),
                       self.episode.repeat)
        if fingerprint in run.done:
            self.skip(SkipReason.RESUMED, "already recorded (--limbo-resume)")
        if run.cost_meter is not None and run.cost_meter.refresh() >= (cost_limit or 0):
            self.skip(SkipReason.COST_LIMIT,
                      f"cost limit of ${cost_limit} reached; not starting new episodes")
        context = RunContext(run_id=run.run_id, experiment=self.experiment, arm=self.arm,
                             repeat=self.episode.repeat)
        record = run_episode(self.episode.key, self.episode.config,
                             registry=limbo.specs.loaded_registry,
                             agent_options=self.agent_options,
                             time_limit_s=limbo.settings.episode_timeout,
                             on_abandon=self.abandoned, context=context)
        self.record, self.record_line = record_line(record)
        if limbo.settings.is_worker:
            self.stop_worker_on_errors(limbo, self.record.error)
        if self.record.error is not None:
            raise InfrastructureFailure(self.record.error)

    def stop_worker_on_errors(self, limbo: Limbo, error: str | None) -> None:
        """Under pytest-xdist each worker holds a queue of episodes the controller's stop would
        let it finish: after ``--limbo-max-errors`` infrastructure errors in a row it stops
        taking them itself (pytest-xdist passes its ``shouldstop`` on to the controller)."""
        run, limit = limbo.run, limbo.settings.max_errors
        run.consecutive_errors = run.consecutive_errors + 1 if error else 0
        if limit and run.consecutive_errors >= limit and not self.session.shouldstop:
            cause = (error or "").strip().splitlines()[0][:300]
            self.session.shouldstop = (
                f"limbo: stopped after {run.consecutive_errors} consecutive infrastructure "
                f"errors (--limbo-max-errors {limit}); the last: {cause}. Finished episodes are "
                "recorded; fix the cause and continue with --limbo-resume")

    def abandoned(self, record: EpisodeRecord) -> None:
        """The episode would not stop at its time limit and its process is about to end (the
        watchdog's thread calls this): its record goes where the controller finds it."""
        import sys

        from limbo_plugin.records import record_line
        from limbo_plugin.store.abandoned import keep_abandoned

        limbo: Limbo = self.config.stash[STATE]
        _, line = record_line(record)
        if limbo.settings.is_worker:
            keep_abandoned(limbo.settings.records_path, line)
            say = f"limbo: {self.name}: {record.error}; the worker is replaced"
        elif limbo.run.writer is not None:
            limbo.run.writer.write(line)
            limbo.run.writer.sync()
            say = (f"limbo: {self.name}: {record.error}. The run stops here; finish it with "
                   "--limbo-resume, or run with -n to have the episode's worker replaced")
        else:
            return
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        with contextlib.suppress(Exception):  # past pytest's capture: the process ends next
            if capture is not None:
                capture.suspend_global_capture(in_=False)
            sys.stderr.write(say + "\n")
            sys.stderr.flush()

    def runtest(self) -> None:
        from limbo_plugin.report import allure as allure_report

        record = self.record
        if record is None:
            return
        if allure_report.enabled(self.config):  # in the call phase: allure owns setup's result
            allure_report.describe(record)
            allure_report.attach(record)
        limbo: Limbo = self.config.stash[STATE]
        if limbo.settings.gate_path is not None:
            # The gate decides the run: the episode is a measurement, its verdict a property.
            from limbo_plugin.plugin.gate_results import FAILURE_PROPERTY, VERDICT_PROPERTY

            verdict = "passed" if record.passed else (
                "expected failure" if record.expected_failure else "failed")
            self.user_properties.append((VERDICT_PROPERTY, verdict))
            if not record.passed:
                self.user_properties.append((FAILURE_PROPERTY, record.failure_message()))
            return
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

    def listextrakeywords(self) -> set[str]:
        """pytest's extra keywords of the item and its parents, with the episode's labels."""
        return super().listextrakeywords().union(self.labels_keywords)

    def hand_over(self, report: pytest.TestReport) -> None:
        """Put the record's line on the outcome's report and let go of the record: an item
        lives to the end of the session, its record only until it is reported."""
        if self.record_line is not None:
            setattr(report, RECORD_ATTRIBUTE, self.record_line)
            limbo: Limbo = self.config.stash[STATE]
            if self.record is not None and not limbo.settings.is_worker:
                from limbo_plugin.store.view import EpisodeView

                setattr(report, VIEW_ATTRIBUTE, EpisodeView.from_record(self.record))
        self.record = None
        self.record_line = None


def keep_shard(config: pytest.Config, limbo: Limbo, items: list[pytest.Item]) -> None:
    """Deselect the episodes of other shards (other items, e.g. a broken spec's, stay)."""
    from limbo_plugin.sharding import shard_of_each

    assert limbo.settings.shard is not None

    episodes = [item for item in items if isinstance(item, EpisodeItem)]
    if not episodes:
        return
    shard = limbo.settings.shard
    shards = shard_of_each([item.episode for item in episodes], limbo.specs.loaded_registry,
                           shard.count)
    elsewhere = {id(item) for item, index in zip(episodes, shards, strict=True)
                 if index != shard.index}
    if elsewhere:
        config.hook.pytest_deselected(items=[i for i in items if id(i) in elsewhere])
        items[:] = [i for i in items if id(i) not in elsewhere]


def keep_sample(config: pytest.Config, limbo: Limbo, items: list[pytest.Item]) -> None:
    """Deselect the episodes of worlds outside ``--limbo-sample`` (other items stay)."""
    from limbo_plugin.sampling import sample_worlds

    assert limbo.settings.sample is not None
    episodes = [item for item in items if isinstance(item, EpisodeItem)]
    if not episodes:
        return
    kept = sample_worlds((item.episode.key for item in episodes), limbo.settings.sample,
                         limbo.specs.loaded_registry)
    elsewhere = {id(item) for item in episodes if item.episode.key not in kept}
    if elsewhere:
        config.hook.pytest_deselected(items=[i for i in items if id(i) in elsewhere])
        items[:] = [i for i in items if id(i) not in elsewhere]
