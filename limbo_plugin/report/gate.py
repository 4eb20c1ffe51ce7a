"""The CI gate: thresholds on the aggregate and a paired comparison with a previous run.

A gate spec (``specs/gates/*.yaml``) lists thresholds — a metric of a fault family at most or at
least a value, judged on the point estimate or on the 95% interval bound the gate names — and
optionally how to compare with a baseline run: exact McNemar on the episodes both runs share
(same world and configuration apart from the agent), failing when the new run is significantly
worse.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from limbo_plugin.errors import SpecError
from limbo_plugin.report.aggregate import ALL_FAULTED, METRICS, Summary, summarize
from limbo_plugin.spec.loader import load_yaml, validate
from limbo_plugin.spec.models import StrictModel
from limbo_plugin.stats import holm, mcnemar_exact
from limbo_plugin.store.read import GradedEpisode

Metric = Literal["duplicate_rate", "eos_rate", "ts_rate", "overclaim_rate"]


MAX_EPISODES = 10_000_000


class Threshold(StrictModel):
    metric: Metric
    """What is judged: ``duplicate_rate``, ``eos_rate``, ``ts_rate`` or ``overclaim_rate``."""
    family: str = ALL_FAULTED
    """The fault family it is judged on, or ``all_faulted`` (every faulted episode)."""
    max: float | None = Field(default=None, ge=0, le=1)
    """The rate must be at most this (a fraction, 0.05 = 5%); give exactly one of ``max`` and
    ``min``."""
    min: float | None = Field(default=None, ge=0, le=1)
    """The rate must be at least this (a fraction)."""
    judge: Literal["point", "bound"] = "point"
    """``point``: the point estimate; ``bound``: the 95% interval's upper end (for ``max``) or
    lower end (for ``min``)."""
    optional: bool = False
    """A check with too few episodes to judge fails, unless it is optional (then it is only
    reported as not judged): a gate must never pass on nothing."""
    min_episodes: int | None = Field(default=None, ge=1, le=MAX_EPISODES)
    """How many episodes the rate must rest on (fired ones; every one for ``none``); default:
    the gate's ``min_episodes``."""

    @model_validator(mode="after")
    def _one_bound(self) -> Threshold:
        if (self.max is None) == (self.min is None):
            raise ValueError("a threshold needs exactly one of 'max' and 'min'")
        return self

    def describe(self) -> str:
        op, limit = ("≤", self.max) if self.max is not None else ("≥", self.min)
        basis = "" if self.judge == "point" else (
            " (95% upper bound)" if self.max is not None else " (95% lower bound)")
        return f"{self.metric}[{self.family}]{basis} {op} {100 * (limit or 0):.1f}%"


class BaselineSpec(StrictModel):
    outcome: Literal["passed", "eos", "no_duplicate"] = "passed"
    """The paired outcome compared with the baseline: ``passed`` (the test's verdict), ``eos`` or
    ``no_duplicate``."""
    alpha: float = Field(default=0.05, gt=0, lt=1)
    """The significance level of the exact McNemar test (Holm-adjusted across families)."""
    by: Literal["all", "family"] = "family"
    """``family``: one test per fault family; ``all``: one test over every paired episode."""


class GateSpec(StrictModel):
    name: str
    """The gate's name, shown in its verdict."""
    description: str = ""
    """What the gate is for."""
    thresholds: list[Threshold] = Field(default_factory=list)
    """Checks on the run's aggregate, each one test result."""
    baseline: BaselineSpec = Field(default_factory=BaselineSpec)
    """How a run is compared with ``--limbo-baseline``: it fails when significantly worse on the
    episodes both share."""
    min_episodes: int = Field(default=1, ge=1, le=MAX_EPISODES)
    """The default of every threshold's ``min_episodes``."""

    @model_validator(mode="after")
    def _judges_something(self) -> GateSpec:
        if not self.thresholds and "baseline" not in self.model_fields_set:
            raise ValueError("the gate has no thresholds and no baseline section, so it would "
                             "pass every run; list thresholds (metric, family, max or min)")
        return self


@dataclass
class Check:
    name: str
    passed: bool
    detail: str
    judged: bool = True
    """Whether the check rested on enough episodes to be judged at all."""


@dataclass
class GateResult:
    gate: str
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every check passed, and there was at least one: a gate never passes on nothing."""
        return bool(self.checks) and all(c.passed for c in self.checks)

    def lines(self) -> list[str]:
        verdict = "PASSED" if self.passed else "FAILED"
        failed = [c for c in self.checks if not c.passed]
        unjudged = sum(1 for c in self.checks if not c.judged)
        judged = (f"; {len(self.checks) - unjudged} judged, {unjudged} without enough episodes"
                  if unjudged else "")
        out = [f"Limbo gate {self.gate!r}: {verdict} "
               f"({len(self.checks) - len(failed)} of {len(self.checks)} checks passed{judged})"]
        out += [f"  {'ok  ' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]
        return out


def load_gate(path: str | Path, *, families: Sequence[str] | None = None) -> GateSpec:
    """Load and validate a gate spec; with ``families`` (the fault spec's), a threshold on a
    family that does not exist (``lat_commit``) is an error rather than a check that never
    applies."""
    doc = load_yaml(path)
    gate = validate(doc, GateSpec)
    checks: dict[tuple[str, str, bool, str], int] = {}
    for i, threshold in enumerate(gate.thresholds):
        same = (threshold.metric, threshold.family, threshold.max is not None, threshold.judge)
        if same in checks:
            raise doc.error(("thresholds", i), f"repeats the check of thresholds[{checks[same]}] "
                            f"({threshold.metric} of {threshold.family}, "
                            f"{'max' if same[2] else 'min'}, judged by {threshold.judge}): keep "
                            "one limit per check")
        checks[same] = i
    if families is not None:
        known = [*families, ALL_FAULTED]
        for i, threshold in enumerate(gate.thresholds):
            if threshold.family not in known:
                raise doc.error(("thresholds", i, "family"),
                                f"unknown family {threshold.family!r}; valid: "
                                + ", ".join(known))
    return gate


def run_gate(gate: GateSpec, records: Sequence[GradedEpisode], *,
             family_order: Sequence[str], baseline: Sequence[GradedEpisode] | None = None
             ) -> GateResult:
    """The gate's verdict on ``records``: its thresholds on their aggregate and, with a
    ``baseline`` run, the paired comparison with it. No records at all is a failed check."""
    result = GateResult(gate=gate.name)
    if not records:
        result.checks.append(Check("episodes", False, "no episode was recorded", judged=False))
        return result
    summary = summarize(records, family_order=family_order)
    if not summary.groups:  # every episode ended in an infrastructure error
        result.checks.append(Check(
            "episodes", False, f"no graded episode: all {summary.errors} recorded episode(s) "
            "ended in an infrastructure error; fix its cause and re-run them with "
            "--limbo-resume", judged=False))
        return result
    result.checks += evaluate_thresholds(gate, summary)
    if baseline is not None:
        result.checks += compare_with_baseline(gate.baseline, records, baseline)
    return result


def unreadable_gate(path: str | Path, error: SpecError) -> GateResult:
    """A gate whose spec does not load fails, with the spec error as its one check."""
    return GateResult(gate=str(path), checks=[Check("gate spec", False, str(error))])


def evaluate_thresholds(gate: GateSpec, summary: Summary) -> list[Check]:
    checks = []
    for label, rows in summary.groups.items():
        by_family = {row.family: row for row in rows}
        faulted = [row for row in rows if row.family not in ("none", ALL_FAULTED)]
        if ALL_FAULTED not in by_family and len(faulted) == 1:
            by_family[ALL_FAULTED] = faulted[0]  # the summary omits a one-family total row
        prefix = f"{label}: " if len(summary.groups) > 1 else ""
        for threshold in gate.thresholds:
            name = prefix + threshold.describe()
            row = by_family.get(threshold.family)
            rate = row.metric(threshold.metric) if row is not None else None
            needed = threshold.min_episodes or gate.min_episodes
            have = rate.n if rate is not None and rate.rate is not None else 0
            if have < needed:
                what = "episodes" if threshold.family == "none" else "fired episodes"
                detail = (f"not judged: {have} {what} of {threshold.family} in this run, "
                          f"the gate needs {needed}")
                if threshold.optional:
                    checks.append(Check(name, True, detail + " (optional)", judged=False))
                else:
                    checks.append(Check(name, False, detail + "; run them, or mark the "
                                        "threshold optional", judged=False))
                continue
            assert rate is not None and rate.rate is not None
            if threshold.max is not None:
                value = rate.high if threshold.judge == "bound" else rate.rate
                passed = value <= threshold.max
            else:
                value = rate.low if threshold.judge == "bound" else rate.rate
                passed = value >= (threshold.min or 0.0)
            detail = (f"{100 * rate.rate:.1f}% ({rate.k}/{rate.n}; 95% interval "
                      f"{100 * rate.low:.1f}–{100 * rate.high:.1f}%)")
            checks.append(Check(name, passed, detail))
    return checks


def _outcome(record: GradedEpisode, which: str) -> bool:
    if which == "eos":
        return bool(record.eos)
    if which == "no_duplicate":
        return record.duplicates == 0
    return record.passed


def _pair_key(record: GradedEpisode) -> tuple[str, ...]:
    r = record
    return (r.episode_id, r.contract, r.docs, r.instruction, r.condition, r.operator)


def compare_with_baseline(spec: BaselineSpec, current: Iterable[GradedEpisode],
                          baseline: Iterable[GradedEpisode]) -> list[Check]:
    """Exact McNemar on paired episodes (Holm-corrected across families when ``by: family``)."""
    before = {_pair_key(r): r for r in baseline if r.error is None}
    pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for record in current:
        old = before.get(_pair_key(record))
        if old is None or record.error is not None:
            continue
        group = record.family if spec.by == "family" else "all"
        pairs[group].append((_outcome(old, spec.outcome), _outcome(record, spec.outcome)))
    if not pairs:
        return [Check("baseline comparison", False,
                      "no episode of this run is in the baseline (same worlds and "
                      "configuration): nothing to compare", judged=False)]
    groups = sorted(pairs)
    raw = []
    counts = []
    for group in groups:
        worse = sum(1 for old, new in pairs[group] if old and not new)
        better = sum(1 for old, new in pairs[group] if new and not old)
        counts.append((worse, better, len(pairs[group])))
        raw.append(mcnemar_exact(worse, better))
    adjusted = holm(raw)
    checks = []
    for group, (worse, better, n), p, p_raw in zip(groups, counts, adjusted, raw, strict=True):
        significant = p < spec.alpha and worse > better
        detail = (f"{n} paired episodes: {worse} now fail that passed, {better} now pass that "
                  f"failed; exact McNemar p={p_raw:.3g}"
                  + (f", Holm-adjusted p={p:.3g} (judged)" if len(groups) > 1 else ""))
        checks.append(Check(f"not worse than baseline [{group}] ({spec.outcome})",
                            not significant, detail))
    return checks


__all__ = ["METRICS", "BaselineSpec", "Check", "GateResult", "GateSpec", "Threshold",
           "compare_with_baseline", "evaluate_thresholds", "load_gate", "run_gate",
           "unreadable_gate"]
