"""Bayesian binomial mixed model (variational Bayes) against closed-form large-sample values.

Without template effects in the data and with 2,400 episodes, the posterior mean of a
coefficient is close to the maximum-likelihood estimate, which for one binary covariate is the
sample log odds ratio log(ad / bc) (Woolf 1955). A mean-field Gaussian approximation gives each
coefficient the precision of the diagonal of the posterior precision matrix (Bishop 2006,
*Pattern Recognition and Machine Learning*, §10.1.2): for the covariate's coefficient that is the
Fisher information Σ_{x=1} p̂(1 − p̂) plus the prior precision 1/2² of statsmodels' default
N(0, 2²) prior. Both are computed below from counts alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from limbo_plugin.stats import MixedResult, bayes_mixed_logit

pytest.importorskip("statsmodels")

RANDOM = {"template": "0 + C(template)", "instance": "0 + C(instance)"}
TERM = "C(contract)[T.unsafe]"
Z975 = 1.959963984540054  # two-sided 95 % normal percentage point (normal tables)


def _simulate(seed: int, template_sd: float, log_or: float = math.log(4.0)) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for template in range(12):
        u = rng.normal(0.0, template_sd) if template_sd > 0 else 0.0
        for instance in range(2):
            for i in range(100):
                unsafe = i % 2
                p = 1 / (1 + math.exp(-(-1.5 + u + log_or * unsafe)))
                rows.append(
                    {
                        "template": f"t{template}",
                        "instance": f"t{template}/{instance}",
                        "contract": "unsafe" if unsafe else "idempotent",
                        "duplicate": int(rng.random() < p),
                    }
                )
    return rows


@pytest.fixture(scope="module")
def no_template_effects() -> tuple[list[dict[str, Any]], MixedResult]:
    rows = _simulate(3, template_sd=0.0)
    return rows, bayes_mixed_logit(rows, "duplicate ~ C(contract)", RANDOM)


def test_posterior_mean_is_close_to_the_sample_log_odds_ratio(
    no_template_effects: tuple[list[dict[str, Any]], MixedResult],
) -> None:
    rows, res = no_template_effects
    a = sum(r["duplicate"] for r in rows if r["contract"] == "unsafe")
    c = sum(r["duplicate"] for r in rows if r["contract"] == "idempotent")
    b, d = 1200 - a, 1200 - c
    assert res.terms == ["Intercept", TERM]
    assert res.n == 2400
    assert res.mean[TERM] == pytest.approx(math.log(a * d / (b * c)), abs=0.02)
    assert res.mean["Intercept"] == pytest.approx(math.log(c / d), abs=0.02)
    assert res.odds_ratio[TERM] == pytest.approx(math.exp(res.mean[TERM]), rel=1e-12)


def test_posterior_sd_is_the_mean_field_value(
    no_template_effects: tuple[list[dict[str, Any]], MixedResult],
) -> None:
    rows, res = no_template_effects
    a = sum(r["duplicate"] for r in rows if r["contract"] == "unsafe")
    p = a / 1200
    precision = 1200 * p * (1 - p) + 1 / 2**2
    assert res.sd[TERM] == pytest.approx(1 / math.sqrt(precision), rel=0.05)


def test_credible_interval_is_mean_plus_minus_z_sd_on_the_log_scale(
    no_template_effects: tuple[list[dict[str, Any]], MixedResult],
) -> None:
    _, res = no_template_effects
    for term in res.terms:
        assert math.log(res.ci_high[term]) == pytest.approx(
            res.mean[term] + Z975 * res.sd[term], rel=1e-12
        )
        assert math.log(res.ci_low[term]) == pytest.approx(
            res.mean[term] - Z975 * res.sd[term], rel=1e-12
        )
    assert res.ci_low[TERM] < 4.0 < res.ci_high[TERM]


def test_random_intercept_sd_reflects_template_variation(
    no_template_effects: tuple[list[dict[str, Any]], MixedResult],
) -> None:
    _, flat = no_template_effects
    varied = bayes_mixed_logit(_simulate(5, template_sd=1.2), "duplicate ~ C(contract)", RANDOM)
    assert set(varied.random_sd) == {"template", "instance"}
    assert 0.6 < varied.random_sd["template"] < 2.4
    assert flat.random_sd["template"] < 0.4
    assert varied.random_sd["template"] > 3 * flat.random_sd["template"]
    assert varied.converged


def test_fit_is_reproducible(no_template_effects: tuple[list[dict[str, Any]], MixedResult]) -> None:
    rows, res = no_template_effects
    assert bayes_mixed_logit(rows, "duplicate ~ C(contract)", RANDOM) == res


def test_separation_gives_finite_prior_regularised_estimates() -> None:
    rows = _simulate(7, template_sd=0.5)
    rows = [{**r, "duplicate": 0} if r["contract"] == "unsafe" else r for r in rows]
    res = bayes_mixed_logit(rows, "duplicate ~ C(contract)", RANDOM)
    assert all(math.isfinite(v) for v in (*res.mean.values(), *res.sd.values()))
    assert res.odds_ratio[TERM] < 0.05
    assert res.ci_low[TERM] < res.odds_ratio[TERM] < res.ci_high[TERM]


@pytest.mark.parametrize(
    ("rows", "formula", "random", "message"),
    [
        ([], "duplicate ~ C(contract)", RANDOM, "no rows"),
        (_simulate(1, 0.0)[:50], "duplicate ~ C(contract)", {}, "at least one random intercept"),
        (
            [{**r, "duplicate": 1} for r in _simulate(1, 0.0)[:50]],
            "duplicate ~ C(contract)",
            RANDOM,
            "is 1 in all 50 rows",
        ),
        (_simulate(1, 0.0)[:50], "duplicate ~ C(model)", RANDOM, r"cannot build.*fields: contract"),
        (
            _simulate(1, 0.0)[:50],
            "duplicate ~ C(contract)",
            {"template": "0 + C(tmpl)"},
            "cannot build",
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    rows: list[dict[str, Any]], formula: str, random: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        bayes_mixed_logit(rows, formula, random)
