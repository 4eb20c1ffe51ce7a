"""Equivalence of two independent proportions (TOST), for comparisons of different episodes.

The paper's H4 compares episodes that are not matched one to one, so the paired TOST of
:mod:`limbo_plugin.stats.paired` does not apply; this is its counterpart for two independent
samples, with the same result type and the same ±5 pp default margin.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.stats._inputs import check_alpha, check_binary
from limbo_plugin.stats.paired import TostResult

__all__ = ["tost_independent"]


def tost_independent(
    x: Sequence[bool | int],
    y: Sequence[bool | int],
    margin: float = 0.05,
    alpha: float = 0.05,
) -> TostResult:
    """Two one-sided tests (TOST) of equivalence for the difference of two independent proportions.

    δ = P(x) − P(y) from two independent samples of binary outcomes. Equivalence within
    ±``margin`` is concluded when both H0: δ ≤ −margin and H0: δ ≥ +margin are rejected at level
    α (Schuirmann 1987), which is the same as the (1 − 2α) interval lying inside the margins.

    Method: Wald z-tests on the Agresti–Caffo (2000) adjusted estimate, which adds one success and
    one failure to each sample::

        p̃ᵢ = (kᵢ + 1) / (nᵢ + 2),   δ̃ = p̃₁ − p̃₂,   se = sqrt(Σ p̃ᵢ (1 − p̃ᵢ) / (nᵢ + 2))

    This is the independent-samples sibling of the Agresti–Min adjustment used by the paired
    TOST: the plain Wald interval has zero width when both samples are all 0 (the usual case for a
    duplicate rate of a careful agent) and undercovers near 0 and 1, while the adjusted interval
    stays close to nominal coverage for small samples (Agresti & Caffo, Am. Stat. 54:280–288).
    The tests and the interval come from statsmodels (``tost_proportions_2indep`` and
    ``confint_proportions_2indep`` with ``method="agresti-caffo"``); both use the same δ̃ and se,
    so the p-value and the interval are exactly dual. ``diff`` reports the unadjusted
    ``k₁/n₁ − k₂/n₂`` and ``n`` is ``len(x) + len(y)``.
    """
    if len(x) == 0 or len(y) == 0:
        raise ValueError(
            f"both samples need at least one outcome, got {len(x)} and {len(y)} outcomes"
        )
    if not margin > 0.0:
        raise ValueError(f"margin must be positive, got {margin!r}")
    alpha = check_alpha(alpha)
    k1, n1 = sum(check_binary(x, "outcomes of x")), len(x)
    k2, n2 = sum(check_binary(y, "outcomes of y")), len(y)

    import numpy as np
    from statsmodels.stats.proportion import (
        confint_proportions_2indep,
        tost_proportions_2indep,
    )

    method = "agresti-caffo"
    # statsmodels also computes the unadjusted odds and risk ratios, which divide by zero when a
    # sample has no events; they are not used here.
    with np.errstate(divide="ignore", invalid="ignore"):
        tost = tost_proportions_2indep(k1, n1, k2, n2, -margin, margin, method=method)
        low, high = confint_proportions_2indep(k1, n1, k2, n2, method=method, alpha=2 * alpha)
    p_lower = float(tost.results_larger.pvalue)
    p_upper = float(tost.results_smaller.pvalue)
    pvalue = max(p_lower, p_upper)
    return TostResult(
        diff=k1 / n1 - k2 / n2,
        low=float(low),
        high=float(high),
        pvalue=pvalue,
        p_lower=p_lower,
        p_upper=p_upper,
        margin=float(margin),
        alpha=alpha,
        n=n1 + n2,
        equivalent=pvalue < alpha,
    )
