"""Statistics of the benchmark (SPEC §7): per-cell intervals and paired tests.

Why Wilson on a Kish effective sample size. Episodes that share a task template are correlated,
so a cell's intervals must account for clustering by template. The obvious tool, a cluster
bootstrap, resamples whole templates, but there are only twelve: with so few clusters the bootstrap
distribution is coarse and its intervals are too narrow (anti-conservative), and in a cell with no
events every resample has no events, so the interval degenerates to the single point 0. Instead the
cell's ``n`` is deflated by the design effect ``1 + (m̄ − 1) ρ`` (Kish), with ``m̄`` the mean
episodes per template and ρ the intra-class correlation by template (one-way ANOVA estimator,
truncated at 0), and the Wilson score interval, which behaves well at 0 % and 100 %, is taken on
that effective size. ρ is best estimated once per experiment and passed in, since sparse cells do
not identify it.

Paired comparisons (the same worlds under two conditions) use the exact McNemar test with
Holm–Bonferroni correction within each family of tests, and equivalence (H4) uses two one-sided
tests with a ±5 pp margin.

Only scipy is needed; it is imported when a function is first called.
"""

from limbo_plugin.stats.intervals import (
    RateEstimate,
    icc_binary,
    kish_effective_n,
    rate_with_interval,
    wilson_interval,
)
from limbo_plugin.stats.paired import (
    TostResult,
    holm,
    mcnemar_exact,
    paired_counts,
    tost_paired_difference,
)

__all__ = [
    "RateEstimate",
    "TostResult",
    "holm",
    "icc_binary",
    "kish_effective_n",
    "mcnemar_exact",
    "paired_counts",
    "rate_with_interval",
    "tost_paired_difference",
    "wilson_interval",
]
