"""Bayesian binomial mixed model with random intercepts (the paper's preregistered H1 regression).

Episodes share a template and, within it, an instance; random intercepts for both absorb that
correlation while the fixed effects (model, fault, contract class) are estimated. The paper fits
this model by variational Bayes, which is fast and deterministic enough to rerun on every report.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from limbo_plugin.stats._inputs import check_confidence, design_error, model_frame
from limbo_plugin.stats._normal import normal_quantile
from limbo_plugin.stats._odds import odds_ratio_bounds

__all__ = ["MixedResult", "bayes_mixed_logit"]

# Seed of the random starting values of the variational fit, so that a report is reproducible.
_START_SEED = 0


@dataclass(frozen=True)
class MixedResult:
    """Posterior summaries of the fixed effects of a binomial mixed model (variational Bayes).

    Every dict is keyed by fixed-effect term (patsy's column names). ``mean``/``sd`` are the
    approximate posterior mean and standard deviation of each log-odds coefficient;
    ``odds_ratio`` is ``exp(mean)`` and ``ci_low``/``ci_high`` the exponentiated equal-tailed
    credible bounds ``mean ∓ z·sd``. ``n`` is the number of episodes. ``random_sd`` maps each
    random-effect name to the standard deviation of its intercepts (``exp`` of the posterior mean
    of its log-SD) and ``converged`` says whether the optimiser reported convergence.
    """

    terms: list[str]
    mean: dict[str, float]
    sd: dict[str, float]
    odds_ratio: dict[str, float]
    ci_low: dict[str, float]
    ci_high: dict[str, float]
    n: int
    random_sd: dict[str, float] = field(default_factory=dict)
    converged: bool = True


def _fit_vb(
    frame: Any, formula: str, random: Mapping[str, str], rows: Sequence[Mapping[str, Any]]
) -> tuple[Any, Any, bool]:
    """Fit statsmodels' ``BinomialBayesMixedGLM`` by ``fit_vb``; model, result, converged."""
    import numpy as np
    from patsy import PatsyError
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    try:
        model = BinomialBayesMixedGLM.from_formula(formula, dict(random), frame)
    except PatsyError as exc:
        raise design_error(formula, exc, rows) from exc
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        result = model.fit_vb(rng=np.random.default_rng(_START_SEED))
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return model, result, converged


def bayes_mixed_logit(
    rows: Sequence[Mapping[str, Any]],
    formula: str,
    random: Mapping[str, str],
    *,
    confidence: float = 0.95,
) -> MixedResult:
    """Bayesian logistic regression with random intercepts, fitted by variational Bayes.

    The model is ``logit P(y = 1) = Xβ + Σ_r Z_r u_r`` with ``u_r ~ N(0, σ_r²)`` for each entry
    of ``random`` (name → patsy formula of its indicator columns, e.g.
    ``{"template": "0 + C(template)", "instance": "0 + C(template_instance)"}``), Gaussian priors
    on β and on log σ_r, and a mean-field Gaussian approximation of the posterior found by
    maximising the evidence lower bound: statsmodels' ``BinomialBayesMixedGLM.fit_vb``, after
    the variational Bayes method for GLMMs of Ormerod & Wand (2010) and Blei, Kucukelbir &
    McAuliffe (2017). Credible intervals are ``exp(mean ∓ z·sd)`` of the Gaussian posterior
    approximation, with z the normal quantile for ``confidence``.

    Mean-field variational posteriors are known to understate posterior spread somewhat; the
    paper reports the GEE (:func:`~limbo_plugin.stats.gee_logit`) beside this model as a
    frequentist check. The priors keep estimates finite under separation (a level with no
    events), so unlike the GEE this model does not refuse such data. Errors (``ValueError``):
    no rows, no random effects, a constant outcome, a formula that cannot be built, and an
    approximation that does not yield finite posterior summaries.
    """
    confidence = check_confidence(confidence)
    if len(random) == 0:
        raise ValueError(
            "random must name at least one random intercept, e.g. "
            "{'template': '0 + C(template)'}; without one use gee_logit"
        )
    frame, outcome = model_frame(rows, formula, extra_formulas=random.values())
    events = int(frame[outcome].sum())
    if events in (0, len(frame)):
        raise ValueError(
            f"outcome {outcome!r} is {int(events > 0)} in all {len(frame)} rows: there is no "
            "variation for a logistic model to describe"
        )
    model, result, converged = _fit_vb(frame, formula, random, rows)
    terms = list(model.exog_names)
    mean = {t: float(v) for t, v in zip(terms, result.fe_mean, strict=True)}
    sd = {t: float(v) for t, v in zip(terms, result.fe_sd, strict=True)}
    if not all(math.isfinite(mean[t]) and math.isfinite(sd[t]) for t in terms):
        raise ValueError(
            f"the variational fit of {formula!r} gave non-finite posterior summaries "
            f"(means {mean}, sds {sd})"
        )
    quantile = normal_quantile(0.5 + confidence / 2.0)
    bounds = {t: odds_ratio_bounds(mean[t], sd[t], quantile) for t in terms}
    random_sd = {
        name: math.exp(float(v)) for name, v in zip(model.vcp_names, result.vcp_mean, strict=True)
    }
    return MixedResult(
        terms=terms,
        mean=mean,
        sd=sd,
        odds_ratio={t: bounds[t][0] for t in terms},
        ci_low={t: bounds[t][1] for t in terms},
        ci_high={t: bounds[t][2] for t in terms},
        n=len(frame),
        random_sd=random_sd,
        converged=converged,
    )
