"""Shapley decomposition of McFadden's pseudo-R² over categorical factors (paper Table 4).

Which factor explains duplicates — the model, the write's contract, the fault, the harness? The
factors are crossed but not balanced, so the R² a factor adds depends on which factors are already
in the model. The Shapley value (Shapley 1953) averages that increment over every order in which
the factors can enter, the decomposition Lipovetsky & Conklin (2001) and Israeli (2007) proposed
for R²; its contributions are the only ones that sum to the full model's R² while treating
factors symmetrically. McFadden's (1974) ``1 − log L / log L₀`` is the R² of a logistic fit.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from limbo_plugin.stats._inputs import check_binary, rows_to_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ShapleyResult", "mcfadden_r2_by_subset", "shapley_pseudo_r2", "shapley_values"]

# Below this, an R² is floating-point noise of a model that explains nothing (R² is ≥ 0 in exact
# arithmetic: a model with more terms never fits worse than the null model).
_R2_NOISE = 1e-12


@dataclass(frozen=True)
class ShapleyResult:
    """McFadden's R² of the full model and each factor's Shapley share of it.

    ``contributions`` sum to ``r2``; ``shares`` are ``contributions / r2`` and sum to 1 (empty
    when ``r2`` is 0: no factor explains anything, so there is nothing to share). ``subset_r2``
    maps every subset of the factors (a tuple in the order given) to its R², the inputs of the
    decomposition. ``n`` is the number of episodes.
    """

    r2: float
    contributions: dict[str, float]
    shares: dict[str, float]
    n: int
    subset_r2: dict[tuple[str, ...], float] = field(default_factory=dict)


def shapley_values(
    players: Sequence[str], value: Mapping[frozenset[str], float]
) -> dict[str, float]:
    """Shapley (1953) value of each player of the cooperative game ``value``.

    ``value`` maps every subset of ``players`` to its worth (the empty set included). Player j
    receives ``Σ_{S ∌ j} |S|! (p − |S| − 1)! / p! · (v(S ∪ {j}) − v(S))``, the mean of its
    marginal worth over all p! orders of entry; by construction the values sum to
    ``v(all) − v(∅)``.
    """
    p = len(players)
    values: dict[str, float] = {}
    for player in players:
        others = [q for q in players if q != player]
        total = 0.0
        for size in range(p):
            weight = math.factorial(size) * math.factorial(p - size - 1) / math.factorial(p)
            for subset in itertools.combinations(others, size):
                without = frozenset(subset)
                total += weight * (value[without | {player}] - value[without])
        values[player] = total
    return values


def _bernoulli_loglik(y: Any, weight: Any, mu: Any) -> float:
    """Σ w (y log μ + (1 − y) log(1 − μ)), with 0 log 0 = 0 so that fitted 0s and 1s are exact."""
    from scipy.special import xlogy

    return float((weight * (xlogy(y, mu) + xlogy(1 - y, 1 - mu))).sum())


def _max_loglik(cells: pd.DataFrame, factors: Sequence[str]) -> float:
    """Maximised log-likelihood of the main-effects logistic model of ``factors``.

    ``cells`` holds one row per (factor levels, outcome) with its episode count in ``weight``; a
    binomial GLM with those frequency weights has the same likelihood as one row per episode and
    is much faster. The fit is iteratively reweighted least squares (statsmodels ``GLM``): under
    separation (a level with 0 % or 100 % outcomes) the coefficients diverge but the fitted
    probabilities, and so the log-likelihood, converge to the supremum, which is what McFadden's
    R² needs. A rank-deficient design (one factor nested in another) is solved by pseudo-inverse
    and has the likelihood of its column space.
    """
    # not statsmodels.api, which also loads time series and datasets (see gee.py)
    import numpy as np
    import pandas as pd
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_linear_model import GLM
    from statsmodels.tools.sm_exceptions import PerfectSeparationWarning, SingularMatrixWarning

    y = cells["y"].to_numpy(dtype=float)
    weight = cells["weight"].to_numpy(dtype=float)
    dummies = [pd.get_dummies(cells[f], prefix=f, drop_first=True, dtype=float) for f in factors]
    exog = pd.concat([pd.Series(1.0, index=cells.index, name="const"), *dummies], axis=1)
    model = GLM(y, exog.to_numpy(), family=Binomial(), freq_weights=weight)
    with warnings.catch_warnings():
        # Both are expected and handled as described above.
        warnings.simplefilter("ignore", PerfectSeparationWarning)
        warnings.simplefilter("ignore", SingularMatrixWarning)
        result = model.fit()
    if not result.converged:
        raise ValueError(f"the logistic fit of factors {list(factors)} did not converge")
    mu = np.asarray(result.fittedvalues, dtype=float)
    return _bernoulli_loglik(y, weight, mu)


def mcfadden_r2_by_subset(
    frame: pd.DataFrame, outcome: str, factors: Sequence[str]
) -> dict[frozenset[str], float]:
    """McFadden's (1974) pseudo-R² ``1 − log L_S / log L₀`` for every subset S of ``factors``.

    ``log L₀`` is the intercept-only model, ``Σ [k log p̄ + (n − k) log(1 − p̄)]``. A factor with a
    single level adds no column, so subsets that differ only by such factors share one fit and
    their R² are identical (its Shapley value is exactly 0). Values below 1e-12 are rounding noise
    of a model that explains nothing and are set to 0.
    """
    n = len(frame)
    k = int(frame[outcome].sum())
    if k in (0, n):
        raise ValueError(
            f"outcome {outcome!r} is {int(k == n)} in all {n} rows: there is no variance to "
            "explain and McFadden's pseudo-R² is undefined (0/0)"
        )
    log_l0 = k * math.log(k / n) + (n - k) * math.log((n - k) / n)
    cells = frame.groupby([*factors, outcome], observed=True).size().reset_index(name="weight")
    cells = cells.rename(columns={outcome: "y"})
    varying = {f for f in factors if frame[f].nunique() > 1}
    fitted: dict[tuple[str, ...], float] = {(): log_l0}
    r2: dict[frozenset[str], float] = {}
    for size in range(len(factors) + 1):
        for subset in itertools.combinations(factors, size):
            effective = tuple(f for f in subset if f in varying)
            if effective not in fitted:
                fitted[effective] = _max_loglik(cells, effective)
            value = 1.0 - fitted[effective] / log_l0
            r2[frozenset(subset)] = 0.0 if value < _R2_NOISE else min(value, 1.0)
    return r2


def shapley_pseudo_r2(
    rows: Sequence[Mapping[str, Any]], outcome: str, factors: Sequence[str]
) -> ShapleyResult:
    """Shapley decomposition of McFadden's pseudo-R² of a logistic model over categorical factors.

    ``rows`` has one mapping per episode with the 0/1 ``outcome`` field and a value for every
    factor (any hashable; compared as text). For each of the 2^p subsets of the p factors a
    main-effects logistic model (dummy coded) is fitted by maximum likelihood
    (:func:`mcfadden_r2_by_subset`) and the full model's R² is split by :func:`shapley_values`
    (Shapley 1953; for R², Lipovetsky & Conklin 2001). Separation is handled by taking the
    supremum of the likelihood, and a single-level factor contributes exactly 0.

    A constant outcome (all 0 or all 1) has no variance to explain and is a ``ValueError``, as are
    an empty ``rows``, no factors, repeated factors and rows missing a field.
    """
    if len(factors) == 0:
        raise ValueError("factors must name at least one field to decompose over")
    if len(set(factors)) != len(factors):
        raise ValueError(f"factors must be distinct, got {list(factors)!r}")
    if outcome in factors:
        raise ValueError(f"outcome {outcome!r} cannot also be a factor")
    frame = rows_to_frame(rows, [outcome, *factors])
    frame[outcome] = check_binary(frame[outcome], f"outcome {outcome!r}")
    for factor in factors:
        frame[factor] = frame[factor].map(str)
    by_subset = mcfadden_r2_by_subset(frame, outcome, factors)
    r2 = by_subset[frozenset(factors)]
    contributions = shapley_values(factors, by_subset)
    shares = {f: c / r2 for f, c in contributions.items()} if r2 > 0.0 else {}
    order = {f: i for i, f in enumerate(factors)}
    subset_r2 = {tuple(sorted(s, key=order.__getitem__)): value for s, value in by_subset.items()}
    return ShapleyResult(
        r2=r2, contributions=contributions, shares=shares, n=len(frame), subset_r2=subset_r2
    )
