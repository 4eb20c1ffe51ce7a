"""Per-cell intervals: Wilson on a Kish effective sample size, with an ANOVA estimate of ρ.

Episodes that share a task template are correlated, so a cell's ``n`` overstates the information it
holds. The design effect of Kish (1965) deflates ``n`` to ``n / (1 + (m̄ − 1) ρ)`` and the Wilson
score interval is then computed on that effective size. Wilson is used rather than the Wald
interval because cells routinely sit at or near 0 % and 100 %, where Wald collapses to a point.

scipy's ``binomtest(...).proportion_ci(method="wilson")`` requires integer counts, but an effective
sample size is fractional, so the closed form is written out here with the standard library's
``statistics.NormalDist`` for the quantile: the plugin imports its reporters on every run, and
importing scipy for one number would cost seconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from limbo_plugin.stats._normal import normal_quantile

__all__ = [
    "RateEstimate",
    "icc_binary",
    "icc_within_cells",
    "kish_effective_n",
    "rate_with_interval",
    "wilson_interval",
]


def _z(confidence: float) -> float:
    """Two-sided standard-normal quantile for ``confidence`` (1.959964… for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return normal_quantile(0.5 + confidence / 2.0)


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion, allowing fractional counts.

    ``successes`` and ``n`` may be non-integers so that the interval can be taken on a Kish
    effective sample size (successes scaled by ``n_eff / n``). With ``n == 0`` there is no
    information and the interval is the whole unit interval ``(0.0, 1.0)``. The bounds are clipped
    to ``[0, 1]`` and pinned to exactly 0 (1) when there are no successes (failures), so that
    floating-point noise never produces a bound like ``-1e-17``.

    Matches ``statsmodels.stats.proportion.proportion_confint(method="wilson")``.
    """
    z = _z(confidence)
    if not (math.isfinite(n) and math.isfinite(successes)):
        raise ValueError(f"successes and n must be finite, got {successes!r}, {n!r}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n!r}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n] = [0, {n!r}], got {successes!r}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _as_binary(values: Sequence[bool | int], cluster: str) -> list[int]:
    out = []
    for v in values:
        if v not in (0, 1):  # True == 1 and False == 0, so bools pass
            raise ValueError(f"cluster {cluster!r}: outcomes must be binary (0/1), got {v!r}")
        out.append(int(v))
    return out


def icc_binary(values_by_cluster: Mapping[str, Sequence[bool | int]]) -> float:
    """One-way ANOVA estimate of the intra-class correlation of a binary outcome, truncated at 0.

    With ``k`` non-empty clusters of sizes ``n_i`` (``N`` in total)::

        MSB = Σ n_i (ȳ_i − ȳ)² / (k − 1)
        MSW = Σ_i Σ_j (y_ij − ȳ_i)² / (N − k)
        n₀  = (N − Σ n_i² / N) / (k − 1)
        ρ̂   = (MSB − MSW) / (MSB + (n₀ − 1) MSW)

    ``n₀`` is the usual size correction for unbalanced clusters. The ANOVA estimator is used because
    it is the standard, closed-form estimator for binary outcomes, well behaved with a handful of
    clusters, and needs no iterative fit (Ridout, Demétrio & Firth 1999 compare estimators).

    A negative ρ̂ (clusters more alike than chance) is truncated to 0: a design effect below one
    would narrow the interval past the independent-sampling Wilson interval, which the data cannot
    justify with twelve clusters. Degenerate cells carry no information about clustering and return
    0.0, i.e. no deflation of ``n``:

    * every outcome equal (no events, or only events): 0/0, returns 0.0;
    * fewer than two non-empty clusters: between-cluster variance is not identified, returns 0.0;
    * every cluster of size 1: within-cluster variance is not identified, returns 0.0.

    Clusters of size 1 alongside larger clusters are fine: they add no within-cluster sum of
    squares but do count towards the degrees of freedom. Empty clusters are ignored. Because
    degenerate cells return 0, estimate ρ on pooled data (once per experiment, as the paper does)
    and pass it to :func:`rate_with_interval` rather than relying on a per-cell estimate for
    sparse cells.
    """
    clusters = [_as_binary(vals, name) for name, vals in values_by_cluster.items() if len(vals) > 0]
    k = len(clusters)
    big_n = sum(len(c) for c in clusters)
    if k < 2 or big_n == k:
        return 0.0
    grand = sum(sum(c) for c in clusters) / big_n
    ssb = math.fsum(len(c) * (sum(c) / len(c) - grand) ** 2 for c in clusters)
    # For 0/1 data the within-cluster sum of squares is Σ n_i p_i (1 − p_i) = Σ (s_i − s_i² / n_i).
    ssw = math.fsum(sum(c) - sum(c) ** 2 / len(c) for c in clusters)
    msb = ssb / (k - 1)
    msw = ssw / (big_n - k)
    n0 = (big_n - sum(len(c) ** 2 for c in clusters) / big_n) / (k - 1)
    denom = msb + (n0 - 1.0) * msw
    if denom <= 0.0:
        return 0.0
    rho = (msb - msw) / denom
    return min(1.0, max(0.0, rho))


def icc_within_cells(cells: Iterable[Mapping[str, Sequence[bool | int]]]) -> float:
    """The intra-class correlation by template *within* cells: one-way ANOVA around each cell's
    own mean, sums of squares and degrees of freedom pooled over the cells, truncated at 0.

    A cell is a set of episodes whose rate is reported together (a configuration and a fault
    family); ``cells`` gives, for each, its outcomes by template. With ``k_c`` non-empty
    templates and ``N_c`` episodes in cell ``c``, ``n_ct`` episodes of template ``t``::

        SSB = Σ_c Σ_t n_ct (ȳ_ct − ȳ_c)²          df_B = Σ_c (k_c − 1)
        SSW = Σ_c Σ_t Σ_j (y_ctj − ȳ_ct)²         df_W = Σ_c (N_c − k_c)
        n₀  = Σ_c (N_c − Σ_t n_ct² / N_c) / df_B
        ρ̂   = (MSB − MSW) / (MSB + (n₀ − 1) MSW)

    This is the ANOVA estimator pooled over strata (Donner & Klar 2000, *Design and Analysis
    of Cluster Randomization Trials in Health Research*, the pooled one-way ANOVA estimator over
    intervention groups; n₀ as in Searle, Casella & McCulloch 1992, *Variance Components*).
    Centring on each cell's own mean is what makes it *within-cell*: a difference between cells
    (one family duplicating far more often than another) is not variation between templates,
    and the estimate of :func:`icc_binary` over the pooled cells counts it as within-template
    noise and drives ρ towards 0. One cell gives exactly :func:`icc_binary`.

    Returns 0.0 where ρ is not identified (no cell with two templates, or no within-template
    replication) and where the estimate is negative (as :func:`icc_binary`).
    """
    ssb = ssw = size_term = 0.0
    df_b = df_w = 0
    for cell in cells:
        groups = [_as_binary(vals, name) for name, vals in cell.items() if len(vals) > 0]
        k = len(groups)
        big_n = sum(len(g) for g in groups)
        if big_n == 0:
            continue
        mean = sum(sum(g) for g in groups) / big_n
        ssb += math.fsum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups)
        ssw += math.fsum(sum(g) - sum(g) ** 2 / len(g) for g in groups)
        size_term += big_n - sum(len(g) ** 2 for g in groups) / big_n
        df_b += k - 1
        df_w += big_n - k
    if df_b == 0 or df_w == 0:
        return 0.0
    msb, msw = ssb / df_b, ssw / df_w
    n0 = size_term / df_b
    denom = msb + (n0 - 1.0) * msw
    if denom <= 0.0:
        return 0.0
    return min(1.0, max(0.0, (msb - msw) / denom))


def kish_effective_n(n: float, mean_cluster_size: float, icc: float) -> float:
    """Kish effective sample size ``n / (1 + (m̄ − 1) ρ)``.

    ``1 + (m̄ − 1) ρ`` is the design effect of cluster sampling with mean cluster size ``m̄``: with
    ρ = 0 or singleton clusters it is 1 and ``n`` is unchanged; with ρ = 1 every cluster counts as
    one observation and the result is the number of clusters, ``n / m̄``. ρ must lie in [0, 1]
    (estimate it with :func:`icc_binary`, which truncates at 0) and ``m̄`` must be at least 1
    unless ``n`` is 0.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n!r}")
    if not 0.0 <= icc <= 1.0:
        raise ValueError(f"icc must lie in [0, 1], got {icc!r}")
    if n == 0:
        return 0.0
    if mean_cluster_size < 1.0:
        raise ValueError(f"mean_cluster_size must be at least 1, got {mean_cluster_size!r}")
    return n / (1.0 + (mean_cluster_size - 1.0) * icc)


@dataclass(frozen=True)
class RateEstimate:
    """A cell's rate with its Wilson-on-Kish interval.

    ``k`` events in ``n`` episodes; ``n_eff`` is the Kish effective sample size under ``icc``;
    ``low``/``high`` are the Wilson bounds on ``n_eff``. ``rate`` is NaN when ``n`` is 0 (the
    interval is then ``(0, 1)``).
    """

    k: int
    n: int
    rate: float
    n_eff: float
    icc: float
    low: float
    high: float


def rate_with_interval(
    outcomes_by_cluster: Mapping[str, Sequence[bool | int]],
    icc: float | None = None,
    confidence: float = 0.95,
) -> RateEstimate:
    """Rate of a binary outcome in a cell with a Wilson interval on the Kish effective size.

    ``outcomes_by_cluster`` maps each template to its episodes' outcomes. ``m̄`` is the mean number
    of episodes per non-empty template. When ``icc`` is None, ρ is estimated from this cell with
    :func:`icc_binary`; the paper instead estimates ρ once per experiment and passes it in, which
    is preferable for sparse cells (a cell without events has no estimable ρ and gets 0).

    The Wilson interval is taken on ``n_eff`` with the successes scaled by ``n_eff / n``, which
    keeps the point estimate ``k / n`` and widens the interval by the design effect.
    """
    clusters = {
        name: _as_binary(vals, name) for name, vals in outcomes_by_cluster.items() if len(vals)
    }
    k = sum(sum(c) for c in clusters.values())
    n = sum(len(c) for c in clusters.values())
    rho = icc_binary(clusters) if icc is None else float(icc)
    if n == 0:
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"icc must lie in [0, 1], got {rho!r}")
        low, high = wilson_interval(0, 0, confidence)
        return RateEstimate(k=0, n=0, rate=math.nan, n_eff=0.0, icc=rho, low=low, high=high)
    mean_size = n / len(clusters)
    n_eff = kish_effective_n(n, mean_size, rho)
    rate = k / n
    successes_eff = min(rate * n_eff, n_eff)
    low, high = wilson_interval(successes_eff, n_eff, confidence)
    return RateEstimate(k=k, n=n, rate=rate, n_eff=n_eff, icc=rho, low=low, high=high)
