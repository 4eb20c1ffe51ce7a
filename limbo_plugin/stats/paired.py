"""Paired binary comparisons: exact McNemar, Holm correction, and TOST for equivalence.

Worlds are seeded by (template, instance, focal write, fault mode) only, so two conditions, models
or instruction variants run on identical worlds and their outcomes come in pairs. Paired tests use
only the discordant pairs, which removes the (large) between-world variation from the comparison.

The exact McNemar test and TOST need only exact binomial sums and normal tail areas and quantiles,
which come from the standard library: the gate runs them in the core install, without scipy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from limbo_plugin.stats._normal import normal_cdf, normal_quantile, normal_sf

__all__ = [
    "TostResult",
    "holm",
    "mcnemar_exact",
    "paired_counts",
    "tost_paired_difference",
]


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name} must be a non-negative integer count, got {value!r}")
    return int(value)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``.

    Under H0 (equal marginal proportions) each of the ``b + c`` discordant pairs falls either way
    with probability 1/2, so the test is an exact binomial test of ``b`` in ``b + c`` trials at
    p = 1/2. The exact test is used because discordant counts in a cell are often small, where the
    chi-square approximation is poor. With no discordant pairs there is no evidence of a difference
    and the p-value is 1.0. Agrees with ``statsmodels``' ``mcnemar(table, exact=True)``.
    """
    b = _count(b, "b")
    c = _count(c, "c")
    n = b + c
    if n == 0 or b == c:
        return 1.0
    # At p = 1/2 the two tails are mirror images, so the two-sided p-value is twice the smaller
    # tail (the gate runs this in the core install, without scipy).
    k = min(b, c)
    if n <= EXACT_TAIL_LIMIT:  # summed exactly in integers
        term = tail = 1  # C(n, 0)
        for i in range(k):
            term = term * (n - i) // (i + 1)  # C(n, i + 1)
            tail += term
        return min(1.0, float(tail / 2 ** (n - 1)))  # int / int: correctly rounded, however large
    # Beyond, exact sums grow quadratically slow: sum from the largest term P(X = k) down, in
    # floats, until the terms no longer change the sum (relative accuracy about 1e-10).
    log_pmf = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                - n * math.log(2))
    pmf = math.exp(log_pmf)
    total = 0.0
    for i in range(k, -1, -1):
        total += pmf
        pmf *= i / (n - i + 1)  # P(X = i - 1) / P(X = i)
        if pmf < total * 1e-17:
            break
    return min(1.0, 2 * total)


EXACT_TAIL_LIMIT = 10_000
"""Discordant pairs up to which :func:`mcnemar_exact` sums its tail in exact integers."""


def paired_counts(pairs: Iterable[tuple[bool | int, bool | int]]) -> tuple[int, int, int, int]:
    """Cells ``(a, b, c, d)`` of the paired 2×2 table of ``(x, y)`` outcomes.

    ``a``: both true; ``b``: x true, y false; ``c``: x false, y true; ``d``: both false. This is the
    layout ``[[a, b], [c, d]]`` with x in rows and y in columns, so ``b`` and ``c`` are the
    discordant counts for :func:`mcnemar_exact`.
    """
    a = b = c = d = 0
    for x, y in pairs:
        if x and y:
            a += 1
        elif x:
            b += 1
        elif y:
            c += 1
        else:
            d += 1
    return a, b, c, d


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order.

    The i-th smallest of m p-values is multiplied by ``m − i + 1``; a running maximum makes the
    adjusted values monotone in the raw ones, and they are capped at 1. Holm controls the
    family-wise error rate under any dependence between the tests, which matters here because the
    tests of a family share worlds. Rejecting where the adjusted p is below α is the Holm procedure
    at level α. Agrees with ``statsmodels``' ``multipletests(method="holm")``.
    """
    ps = [float(p) for p in pvalues]
    for p in ps:
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-values must lie in [0, 1], got {p!r}")
    m = len(ps)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=ps.__getitem__)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class TostResult:
    """Outcome of :func:`tost_paired_difference` and :func:`~limbo_plugin.stats.tost_independent`.

    ``diff`` is the observed difference of proportions ``mean(x) − mean(y)``; ``n`` counts the pairs
    (paired version) or all episodes of both samples (independent version);
    ``low``/``high`` bound the (1 − 2α) interval; ``p_lower`` tests H0: δ ≤ −margin, ``p_upper``
    tests H0: δ ≥ +margin, and ``pvalue`` is the larger of the two. ``equivalent`` is
    ``pvalue < alpha``, which holds exactly when the interval lies inside (−margin, +margin).
    """

    diff: float
    low: float
    high: float
    pvalue: float
    p_lower: float
    p_upper: float
    margin: float
    alpha: float
    n: int
    equivalent: bool


def tost_paired_difference(
    x: Sequence[bool | int],
    y: Sequence[bool | int],
    margin: float = 0.05,
    alpha: float = 0.05,
) -> TostResult:
    """Two one-sided tests (TOST) of equivalence for the difference of two paired proportions.

    ``x[i]`` and ``y[i]`` are the binary outcomes of pair ``i`` (the same world under two
    conditions); δ = P(x) − P(y). Equivalence within ±``margin`` is concluded when both
    H0: δ ≤ −margin and H0: δ ≥ +margin are rejected at level α, which is the same as the
    (1 − 2α) interval lying inside (−margin, +margin).

    Method: Wald z-tests on the Agresti–Min (2005) adjusted estimate, which adds 1/2 to each of
    the four cells of the paired table before computing::

        n* = n + 2,   δ* = (b − c) / n*,   se* = sqrt(((b + c + 1) / n* − δ*²) / n*)

    (b, c discordant counts). The plain Wald interval has a zero standard error when there are no
    discordant pairs and undercovers near the boundary; the adjustment fixes both with coverage
    close to nominal for small n (Agresti & Min, Stat. Med. 24:729–740). The test statistics are
    ``(δ* + margin) / se*`` and ``(δ* − margin) / se*`` against the standard normal, so the p-value
    and the reported interval are exactly dual. ``diff`` reports the unadjusted ``(b − c) / n``; the
    interval is centred on the slightly shrunken δ*.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must be paired (equal length), got {len(x)} and {len(y)}")
    if len(x) == 0:
        raise ValueError("no pairs: TOST needs at least one pair")
    if not margin > 0.0:
        raise ValueError(f"margin must be positive, got {margin!r}")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    for v in (*x, *y):
        if v not in (0, 1):
            raise ValueError(f"outcomes must be binary (0/1), got {v!r}")
    _, b, c, _ = paired_counts(zip(map(bool, x), map(bool, y), strict=True))
    n = len(x)
    n_adj = n + 2.0
    d_adj = (b - c) / n_adj
    se = math.sqrt(((b + c + 1.0) / n_adj - d_adj * d_adj) / n_adj)
    p_lower = normal_sf((d_adj + margin) / se)
    p_upper = normal_cdf((d_adj - margin) / se)
    pvalue = max(p_lower, p_upper)
    z = normal_quantile(1.0 - alpha)
    return TostResult(
        diff=(b - c) / n,
        low=d_adj - z * se,
        high=d_adj + z * se,
        pvalue=pvalue,
        p_lower=p_lower,
        p_upper=p_upper,
        margin=float(margin),
        alpha=float(alpha),
        n=n,
        equivalent=pvalue < alpha,
    )
