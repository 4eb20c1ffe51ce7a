"""Logistic GEE clustered by template with small-sample corrections (the paper's frequentist check).

Episodes of one task template are correlated and there are only about twelve templates. The usual
cluster-robust (sandwich) covariance of a GEE is biased downwards with so few clusters and normal
reference distributions make it worse, so both small-sample corrections the paper names are applied:
the bias-reduced covariance of Mancl & DeRouen (2001) and a t reference on G − 1 degrees of freedom.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from limbo_plugin.stats._inputs import check_confidence, design_error, model_frame
from limbo_plugin.stats._odds import odds_ratio_bounds

__all__ = ["GeeResult", "gee_logit"]

# A fitted probability this close to 0 or 1 means a coefficient ran off to ±infinity (separation):
# the maximum-likelihood estimate does not exist and neither does its standard error.
_BOUNDARY = 1e-8


@dataclass(frozen=True)
class GeeResult:
    """Coefficients of a logistic GEE with Mancl–DeRouen standard errors and t(G − 1) inference.

    Every dict is keyed by term (patsy's column names, e.g. ``"Intercept"``,
    ``"C(model)[T.gpt]"``). ``params`` are log-odds, ``se`` their bias-reduced standard errors,
    ``odds_ratio``/``ci_low``/``ci_high`` the exponentiated estimate and confidence bounds and
    ``pvalue`` the two-sided p-value of the term being 0. ``groups`` is the number of clusters G,
    ``df`` = G − 1 and ``n`` the number of episodes. ``correlation`` is the estimated exchangeable
    working correlation within a cluster (None only in results built by hand).
    """

    terms: list[str]
    params: dict[str, float]
    se: dict[str, float]
    odds_ratio: dict[str, float]
    ci_low: dict[str, float]
    ci_high: dict[str, float]
    pvalue: dict[str, float]
    groups: int
    df: int
    n: int
    correlation: float | None = None


def _fit_gee(
    frame: Any, formula: str, cluster: str, rows: Sequence[Mapping[str, Any]]
) -> tuple[Any, Any]:
    """Fit the binomial/logit GEE with an exchangeable working correlation; model and result.

    A rank-deficient design (collinear terms) is refused before fitting: its coefficients are not
    identified and statsmodels would report arbitrary ones.

    statsmodels' ``cov_type="bias_reduced"`` is the Mancl–DeRouen covariance. A non-converged fit
    is an error rather than a warning: its estimates would be printed as if they were results.
    """
    # statsmodels' own modules, not statsmodels.api, which also loads time series and datasets:
    # a third of statsmodels' import time, which no fit here needs
    import numpy as np
    from patsy import PatsyError
    from statsmodels.genmod.cov_struct import Exchangeable
    from statsmodels.genmod.families import Binomial
    from statsmodels.genmod.generalized_estimating_equations import GEE
    from statsmodels.tools.sm_exceptions import ConvergenceWarning, IterationLimitWarning

    try:
        model = GEE.from_formula(
            formula,
            groups=cluster,
            data=frame,
            family=Binomial(),
            cov_struct=Exchangeable(),
        )
    except PatsyError as exc:
        raise design_error(formula, exc, rows) from exc
    exog = np.asarray(model.exog)
    rank = int(np.linalg.matrix_rank(exog))
    if rank < exog.shape[1]:
        raise ValueError(
            f"the design of {formula!r} has {exog.shape[1]} columns but rank {rank}: some terms "
            f"are collinear (columns {model.exog_names})"
        )
    _check_no_separation(exog, np.asarray(model.endog), model.exog_names, formula)
    _check_no_leverage_one(exog, np.asarray(model.groups), model.exog_names, formula)
    with warnings.catch_warnings():
        # Numerical warnings on the way (overflow in exp, 0/0 in a covariance) are not printed:
        # every result is checked below, and an unusable one is a ValueError that says why.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("error", IterationLimitWarning)
        try:
            result = model.fit(cov_type="bias_reduced")
        except (ConvergenceWarning, IterationLimitWarning) as exc:
            raise ValueError(f"GEE for {formula!r} did not converge: {exc}") from exc
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"the bias-reduced covariance of {formula!r} is singular ({exc}): some cluster "
                "has leverage 1, e.g. it is the only cluster at some level of a term"
            ) from exc
    return model, result


def _check_no_separation(exog: Any, endog: Any, names: list[str], formula: str) -> None:
    """Refuse a 0/1 column of the design on one side of which the outcome never varies (a level
    with only 0s or only 1s): its coefficient is infinite (quasi-complete separation). Decided on
    the data before fitting, so the message names the term; a fit would instead run off towards
    infinity and fail later with undefined standard errors."""
    import numpy as np

    for j, name in enumerate(names):
        column = exog[:, j]
        if name == "Intercept" or not np.isin(column, (0.0, 1.0)).all():
            continue
        for side in (1.0, 0.0):
            outcomes = endog[column == side]
            if 0 < outcomes.size < endog.size and np.unique(outcomes).size == 1:
                raise ValueError(
                    f"separation in {formula!r}: every episode with {name} = {side:.0f} has "
                    f"outcome {outcomes[0]:.0f}, so its odds ratio is infinite; merge or drop "
                    "that level"
                )


def _check_no_leverage_one(exog: Any, groups: Any, names: list[str], formula: str) -> None:
    """Refuse a cluster with leverage 1, decided from the design's structure, not from rounding.

    A cluster's leverage block H_ii = D_i B⁻¹ D_iᵀ V_i⁻¹ has an eigenvalue 1 exactly when the other
    clusters' information Σ_(k≠i) D_kᵀ V_k⁻¹ D_k is singular, i.e. when the design without that
    cluster's rows loses rank (the working weights μ(1 − μ) and V_k are positive definite). Then
    (I − H_ii)⁻¹ in the Mancl–DeRouen covariance does not exist, yet a floating-point fit may
    come within rounding of singular without raising and print an interval of 1e-9 to 1e9, so the
    property is tested on the 0/1 design itself, where rank is exact.
    """
    import numpy as np

    full_rank = exog.shape[1]
    for cluster in dict.fromkeys(groups.tolist()):
        rest = exog[groups != cluster]
        if int(np.linalg.matrix_rank(rest)) < full_rank:
            raise ValueError(
                f"cluster {cluster!r} has leverage 1 in {formula!r}: without it the design "
                f"(columns {names}) loses rank, e.g. it is the only cluster at some level of a "
                "term, so its bias-reduced covariance is undefined; add clusters at that level or "
                "merge the level"
            )


def _check_estimable(model: Any, result: Any, formula: str) -> None:
    """Refuse separation and undefined standard errors."""
    import numpy as np

    mu = np.asarray(result.fittedvalues, dtype=float)
    if np.any(mu < _BOUNDARY) or np.any(mu > 1.0 - _BOUNDARY):
        largest = max(model.exog_names, key=lambda t: abs(float(result.params[t])))
        raise ValueError(
            f"separation in {formula!r}: fitted probabilities of 0 or 1 (some level has only 0s "
            f"or only 1s), so odds ratios such as that of {largest!r} are infinite; merge or "
            "drop such levels"
        )
    se = np.asarray(result.bse, dtype=float)
    if not np.all(np.isfinite(se)) or np.any(se <= 0.0):
        raise ValueError(
            f"the bias-reduced standard errors of {formula!r} are undefined ({se.tolist()}): "
            "too few clusters per term"
        )


def gee_logit(
    rows: Sequence[Mapping[str, Any]],
    formula: str,
    cluster: str,
    *,
    confidence: float = 0.95,
) -> GeeResult:
    """Logistic GEE clustered by ``cluster`` with Mancl–DeRouen errors and a t(G − 1) reference.

    Generalised estimating equations (Liang & Zeger 1986) with a binomial family, logit link and
    an exchangeable working correlation within each cluster (template). The covariance is the
    bias-reduced sandwich of Mancl & DeRouen (2001, Biometrics 57:126–134), which inflates each
    cluster's residuals by ``(I − H_ii)⁻¹`` to undo the downward bias of the plain sandwich with
    few clusters; confidence intervals and p-values use Student's t on G − 1 degrees of freedom
    rather than the normal, as recommended for few clusters (e.g. Cameron & Miller 2015). Fitting
    is statsmodels' ``GEE`` with ``cov_type="bias_reduced"``; the t step is written here.

    ``rows`` has one mapping per episode; ``formula`` is a patsy formula with a 0/1 (or bool)
    outcome on the left, e.g. ``"duplicate ~ C(contract) + C(model)"``. Errors (``ValueError``):
    fewer than two clusters (no degrees of freedom), a constant outcome, separation, collinear
    terms, a cluster with leverage 1, a fit that does not converge.
    """
    confidence = check_confidence(confidence)
    frame, outcome = model_frame(rows, formula, extra_fields=[cluster])
    groups = int(frame[cluster].nunique())
    if groups < 2:
        raise ValueError(
            f"GEE needs at least two clusters of {cluster!r}, got {groups}: the cluster-robust "
            "covariance and its t reference on G − 1 degrees of freedom need G ≥ 2"
        )
    events = int(frame[outcome].sum())
    if events in (0, len(frame)):
        raise ValueError(
            f"outcome {outcome!r} is {int(events > 0)} in all {len(frame)} rows: log-odds are "
            "infinite, so there is no logistic model to fit"
        )
    frame[cluster] = frame[cluster].map(str)
    model, result = _fit_gee(frame, formula, cluster, rows)
    _check_estimable(model, result, formula)

    from scipy.stats import t as student_t

    df = groups - 1
    quantile = float(student_t.ppf(0.5 + confidence / 2.0, df))
    terms = list(model.exog_names)
    params = {t: float(result.params[t]) for t in terms}
    se = {t: float(result.bse[t]) for t in terms}
    bounds = {t: odds_ratio_bounds(params[t], se[t], quantile) for t in terms}
    return GeeResult(
        terms=terms,
        params=params,
        se=se,
        odds_ratio={t: bounds[t][0] for t in terms},
        ci_low={t: bounds[t][1] for t in terms},
        ci_high={t: bounds[t][2] for t in terms},
        pvalue={t: float(2.0 * student_t.sf(abs(params[t] / se[t]), df)) for t in terms},
        groups=groups,
        df=df,
        n=len(frame),
        correlation=float(model.cov_struct.dep_params),
    )
