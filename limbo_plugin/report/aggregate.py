"""Aggregate records into rates per fault family, with Wilson-on-Kish intervals (SPEC §7).

Rates of a faulted family are conditional on the fault having fired (an episode whose focal write
was never attempted counts only toward the trigger rate); the fault-free family uses every
episode. Records with an infrastructure error are excluded and counted separately. ρ is the
within-cell estimate over each configuration's own cells of :mod:`limbo_plugin.report.icc`, the
one ``limbo report`` uses by default, so a cell shows the same interval here, in the gate, in
``limbo compare`` and in the report, whatever other records are read with it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from limbo_plugin.report.icc import (
    DUPLICATE,
    EOS,
    OVERCLAIM,
    TS,
    IccBook,
    Measure,
    config_of,
)
from limbo_plugin.store.read import GradedEpisode

METRICS = ("duplicate_rate", "eos_rate", "ts_rate", "overclaim_rate")
ALL_FAULTED = "all_faulted"


@dataclass
class Rate:
    k: int
    n: int
    rate: float | None
    low: float
    high: float
    n_eff: float

    @classmethod
    def of(cls, book: IccBook, records: list[GradedEpisode], measure: Measure) -> Rate:
        estimate = book.rate(records, measure)
        rate = None if estimate.n == 0 else estimate.rate
        return cls(k=estimate.k, n=estimate.n, rate=rate, low=estimate.low, high=estimate.high,
                   n_eff=estimate.n_eff)


@dataclass
class FamilyRow:
    family: str
    episodes: int
    fired: int
    duplicate_rate: Rate
    eos_rate: Rate
    ts_rate: Rate
    overclaim_rate: Rate
    duplicates: int

    def metric(self, name: str) -> Rate:
        value: Rate = getattr(self, name)
        return value


@dataclass
class Summary:
    """Rows per configuration (agent, contract, …) and family."""

    groups: dict[str, list[FamilyRow]] = field(default_factory=dict)
    errors: int = 0
    total: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    icc: dict[str, dict[str, float]] = field(default_factory=dict)
    """ρ by template of each outcome, per group (configuration, within its experiment): the
    estimate behind the group's intervals."""
    icc_cells: dict[str, dict[str, int]] = field(default_factory=dict)
    """How many cells (the group's families with episodes the outcome is defined on) each of
    :attr:`icc` was estimated from."""
    unpriced_calls: int = 0
    """Model calls of models with no known price: the cost is unknown (or, beside priced calls,
    a lower bound), never shown as $0."""
    rerun: int = 0
    """Infrastructure errors a later successful record of the same episode and configuration
    replaced (a resumed run): not errors any more, and not counted twice."""
    duplicates_before_error: list[str] = field(default_factory=list)
    """Episodes that committed a duplicate before their infrastructure error (the agent hung
    after it, say): outside the rates, so listed here instead of silently dropped."""

    @property
    def cost_unknown(self) -> bool:
        """No call had a known price: there is no cost to show."""
        return self.unpriced_calls > 0 and self.cost_usd == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "total_episodes": self.total,
            "infrastructure_errors": self.errors,
            "rerun_after_error": self.rerun,
            "duplicates_before_error": self.duplicates_before_error,
            "usage": {"prompt_tokens": self.prompt_tokens,
                      "completion_tokens": self.completion_tokens,
                      "cost_usd": None if self.cost_unknown else self.cost_usd,
                      "mean_cost_usd": None if self.cost_unknown
                      else self.cost_usd / self.total if self.total else 0.0,
                      "unpriced_model_calls": self.unpriced_calls},
            "groups": {name: [asdict(row) for row in rows]
                       for name, rows in self.groups.items()},
            "icc": self.icc,
            "icc_cells": self.icc_cells,
            "icc_scope": "configuration",
        }

    def icc_line(self, label: str) -> str:
        """``ρ by template over this configuration's 8 cells: duplicate 0.281, …`` for the
        rendered summary, under the group ``label``'s table."""
        values = {m: v[label] for m, v in self.icc.items() if label in v}
        if not values:
            return ""
        cells = max((c.get(label, 0) for c in self.icc_cells.values()), default=0)
        line = (f"ρ by template over this configuration's {cells} cell(s): "
                + ", ".join(f"{m} {v:.3f}" for m, v in values.items()))
        ones = [m for m, v in values.items() if v >= 1.0]
        if ones:
            line += (f" (ρ reaches 1.0 for {', '.join(ones)}: a tiny design where every "
                     "template's episodes agree within each cell, so each template counts once)")
        return line + "."


ICC_EXPLAINED = ("ρ by template is the within-cell one-way ANOVA estimate over each "
                 "configuration's own cells (its fault families, within its experiment): a "
                 "cell's interval depends on its configuration's records alone, the same in "
                 "the gate, limbo compare and limbo report.")


def natural_key(text: str) -> tuple[Any, ...]:
    """Numbers inside names compare as numbers: ``wait_60`` before ``wait_3600``."""
    import re

    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def config_label(record: GradedEpisode) -> str:
    r = record
    return (f"agent={r.agent} contract={r.contract} docs={r.docs} instruction={r.instruction} "
            f"condition={r.condition} operator={r.operator}")


def summarize(records: Iterable[GradedEpisode], *, family_order: Sequence[str]) -> Summary:
    """Rows per configuration and family, families in ``family_order`` (the fault spec's, from
    :attr:`~limbo_plugin.spec.registry.SpecRegistry.family_order`), any others after them by name.

    Order-independent: the same set of records always gives the same summary.
    """
    summary = Summary()
    by_group: dict[str, list[GradedEpisode]] = defaultdict(list)
    graded: list[GradedEpisode] = []
    ordered = sorted(records, key=lambda r: (r.episode_id, r.fingerprint()))
    several = len({getattr(r, "experiment", None) for r in ordered}) > 1
    succeeded = {_identity(r) for r in ordered if r.error is None}
    for record in ordered:
        if record.error is not None and record.duplicates > 0:
            summary.duplicates_before_error.append(getattr(record, "test_id", "")
                                                   or record.episode_id)
        if record.error is not None and _identity(record) in succeeded:
            summary.rerun += 1  # resumed: the successful record of it is counted instead
            continue
        summary.total += 1
        if record.usage:
            summary.prompt_tokens += record.usage.prompt_tokens
            summary.completion_tokens += record.usage.completion_tokens
            summary.cost_usd += record.usage.cost_usd
            summary.unpriced_calls += record.usage.unpriced_calls
        if record.error is not None:
            summary.errors += 1
            continue
        graded.append(record)
        label = config_label(record)
        if several:
            label = f"experiment={getattr(record, 'experiment', None) or '—'} {label}"
        by_group[label].append(record)
    book = IccBook(graded)
    for measure in (DUPLICATE, EOS, TS, OVERCLAIM):
        found = {label: book.estimate(measure, [config_of(group[0])])
                 for label, group in by_group.items()}
        summary.icc[measure.name] = {label: found[label].value
                                     for label in sorted(found, key=natural_key)}
        summary.icc_cells[measure.name] = {label: found[label].cells
                                           for label in sorted(found, key=natural_key)}
    for label in sorted(by_group, key=natural_key):
        group = by_group[label]
        rank = {family: i for i, family in enumerate(family_order)}
        families = sorted({r.family for r in group},
                          key=lambda f: (rank.get(f, len(rank)), f))
        rows = [family_row(f, [r for r in group if r.family == f], book) for f in families]
        faulted = [r for r in group if r.family != "none"]
        if len({r.family for r in faulted}) > 1:
            rows.append(family_row(ALL_FAULTED, faulted, book))
        summary.groups[label] = rows
    return summary


def _identity(record: GradedEpisode) -> tuple[str, str, int]:
    return record.episode_id, record.fingerprint(), int(getattr(record, "repeat", 0) or 0)


def family_row(family: str, records: list[GradedEpisode], book: IccBook) -> FamilyRow:
    counted = records if family == "none" else [r for r in records if r.fired]
    return FamilyRow(
        family=family, episodes=len(records), fired=sum(r.fired for r in records),
        duplicate_rate=Rate.of(book, counted, DUPLICATE),
        eos_rate=Rate.of(book, counted, EOS),
        ts_rate=Rate.of(book, counted, TS),
        overclaim_rate=Rate.of(book, counted, OVERCLAIM),
        duplicates=sum(r.duplicates for r in counted),
    )
