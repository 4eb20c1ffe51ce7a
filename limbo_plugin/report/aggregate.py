"""Aggregate records into rates per fault family, with Wilson-on-Kish intervals (SPEC §7).

Rates of a faulted family are conditional on the fault having fired (an episode whose focal write
was never attempted counts only toward the trigger rate); the fault-free family uses every
episode. Records with an infrastructure error are excluded and counted separately.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from limbo_plugin.report.outcomes import GradedEpisode
from limbo_plugin.stats import rate_with_interval

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
    def of(cls, outcomes: dict[str, list[bool]]) -> Rate:
        estimate = rate_with_interval(outcomes)
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
        return getattr(self, name)


@dataclass
class Summary:
    """Rows per configuration (agent, contract, …) and family."""

    groups: dict[str, list[FamilyRow]] = field(default_factory=dict)
    errors: int = 0
    total: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls of models with no known price: the cost is unknown (or, beside priced calls,
    a lower bound), never shown as $0."""

    @property
    def cost_unknown(self) -> bool:
        """No call had a known price: there is no cost to show."""
        return self.unpriced_calls > 0 and self.cost_usd == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "total_episodes": self.total,
            "infrastructure_errors": self.errors,
            "usage": {"prompt_tokens": self.prompt_tokens,
                      "completion_tokens": self.completion_tokens,
                      "cost_usd": None if self.cost_unknown else round(self.cost_usd, 6),
                      "mean_cost_usd": None if self.cost_unknown
                      else round(self.cost_usd / self.total, 6) if self.total else 0.0,
                      "unpriced_model_calls": self.unpriced_calls},
            "groups": {name: [asdict(row) for row in rows]
                       for name, rows in self.groups.items()},
        }


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
    for record in sorted(records, key=lambda r: (r.episode_id, r.fingerprint())):
        summary.total += 1
        if record.usage:
            summary.prompt_tokens += record.usage.prompt_tokens
            summary.completion_tokens += record.usage.completion_tokens
            summary.cost_usd += record.usage.cost_usd
            summary.unpriced_calls += record.usage.unpriced_calls
        if record.error is not None:
            summary.errors += 1
            continue
        by_group[config_label(record)].append(record)
    for label in sorted(by_group):
        group = by_group[label]
        rank = {family: i for i, family in enumerate(family_order)}
        families = sorted({r.family for r in group},
                          key=lambda f: (rank.get(f, len(rank)), f))
        rows = [family_row(f, [r for r in group if r.family == f]) for f in families]
        faulted = [r for r in group if r.family != "none"]
        if len({r.family for r in faulted}) > 1:
            rows.append(family_row(ALL_FAULTED, faulted))
        summary.groups[label] = rows
    return summary


def family_row(family: str, records: list[GradedEpisode]) -> FamilyRow:
    counted = records if family == "none" else [r for r in records if r.fired]

    def outcomes(test: Any) -> dict[str, list[bool]]:
        table: dict[str, list[bool]] = defaultdict(list)
        for record in counted:
            table[record.template].append(bool(test(record)))
        return dict(table)

    return FamilyRow(
        family=family, episodes=len(records), fired=sum(r.fired for r in records),
        duplicate_rate=Rate.of(outcomes(lambda r: r.duplicates > 0)),
        eos_rate=Rate.of(outcomes(lambda r: r.eos)),
        ts_rate=Rate.of(outcomes(lambda r: r.ts)),
        overclaim_rate=Rate.of(outcomes(lambda r: r.overclaim)),
        duplicates=sum(r.duplicates for r in counted),
    )
