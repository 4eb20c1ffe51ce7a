"""Logistic GEE with Mancl–DeRouen covariance and t(G − 1) inference, against a hand computation.

The data set is built so that everything has a closed form. The covariate ``arm`` is constant
within each cluster and all clusters have the same size m. Then, for an exchangeable working
correlation R(α), each cluster's estimating equation is proportional to x_i Σ_j (y_ij − μ_i), so
the GEE estimate reproduces each arm's pooled proportion whatever α is (logit(3/8), and
logit(5/8) − logit(3/8) = log(25/9)). In the Mancl–DeRouen (2001) covariance

    V = B⁻¹ [Σ_i D_iᵀ V_i⁻¹ (I − H_ii)⁻¹ r_i r_iᵀ (I − H_ii)⁻ᵀ V_i⁻¹ D_i] B⁻¹,
    H_ii = D_i B⁻¹ D_iᵀ V_i⁻¹,   B = Σ_i D_iᵀ V_i⁻¹ D_i,

D_i = a_i 1 x_iᵀ (a_i = μ_i (1 − μ_i)) and V_i⁻¹ 1 ∝ 1, so H_ii = (h_i / m) 1 1ᵀ with the
cluster leverage h_i = a_i x_iᵀ (Σ_k a_k x_k x_kᵀ)⁻¹ x_i, and by Sherman–Morrison V reduces to

    V = m⁻² A⁻¹ [Σ_i x_i x_iᵀ e_i² / (1 − h_i)²] A⁻¹,   A = Σ_i a_i x_i x_iᵀ,   e_i = Σ_j r_ij,

free of α and the scale. That is computed below with numpy alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from limbo_plugin.stats import GeeResult, gee_logit

pytest.importorskip("statsmodels")

# Two clusters in arm 0 (leverage 1/2 each), four in arm 1 (leverage 1/4 each); m = 4.
CLUSTERS = {
    "t0": (0, [1, 0, 0, 0]),
    "t1": (0, [1, 1, 0, 0]),
    "t2": (1, [1, 1, 1, 0]),
    "t3": (1, [1, 0, 1, 0]),
    "t4": (1, [1, 1, 1, 1]),
    "t5": (1, [0, 1, 0, 0]),
}
ARM_TERM = "C(arm)[T.b]"
# Student's t, 5 degrees of freedom, upper 2.5 % point (any t table, e.g. Fisher & Yates 1938).
T_975_DF5 = 2.5706


def _rows(clusters: dict[str, tuple[int, list[int]]]) -> list[dict[str, Any]]:
    return [
        {"template": name, "arm": "ab"[arm], "duplicate": y}
        for name, (arm, outcomes) in clusters.items()
        for y in outcomes
    ]


def _hand_mancl_derouen(clusters: dict[str, tuple[int, list[int]]]) -> tuple[Any, Any]:
    """β and the Mancl–DeRouen covariance from the closed form in the module docstring."""
    m = len(next(iter(clusters.values()))[1])
    by_arm: dict[int, list[int]] = {}
    for arm, outcomes in clusters.values():
        by_arm.setdefault(arm, []).extend(outcomes)
    mu = {arm: sum(ys) / len(ys) for arm, ys in by_arm.items()}
    beta = np.array(
        [
            math.log(mu[0] / (1 - mu[0])),
            math.log(mu[1] / (1 - mu[1])) - math.log(mu[0] / (1 - mu[0])),
        ]
    )
    xs = {name: np.array([1.0, float(arm)]) for name, (arm, _) in clusters.items()}
    a = {name: mu[arm] * (1 - mu[arm]) for name, (arm, _) in clusters.items()}
    big_a = sum(a[name] * np.outer(xs[name], xs[name]) for name in clusters)
    a_inv = np.linalg.inv(big_a)
    meat = np.zeros((2, 2))
    for name, (arm, outcomes) in clusters.items():
        h = a[name] * xs[name] @ a_inv @ xs[name]
        e = sum(y - mu[arm] for y in outcomes)
        meat += np.outer(xs[name], xs[name]) * e**2 / (1 - h) ** 2
    return beta, a_inv @ meat @ a_inv / m**2


def _t5_two_sided_p(t: float) -> float:
    """1 − A(t | 5), A from Abramowitz & Stegun 26.7.3 for odd ν: θ = atan(t/√5),
    A = (2/π) [θ + sin θ (cos θ + (2/3) cos³ θ)]."""
    theta = math.atan(abs(t) / math.sqrt(5))
    c = math.cos(theta)
    return 1 - 2 / math.pi * (theta + math.sin(theta) * (c + 2 / 3 * c**3))


def test_leverages_of_the_design_are_as_stated() -> None:
    # Leverage is 1 / (clusters in the arm): 1/2 in arm 0 and 1/4 in arm 1, summing to p = 2.
    mu0, mu1 = 3 / 8, 5 / 8
    a0, a1 = mu0 * (1 - mu0), mu1 * (1 - mu1)
    big_a = np.array([[2 * a0 + 4 * a1, 4 * a1], [4 * a1, 4 * a1]])
    inv = np.linalg.inv(big_a)
    h0 = a0 * np.array([1, 0]) @ inv @ np.array([1, 0])
    h1 = a1 * np.array([1, 1]) @ inv @ np.array([1, 1])
    assert (h0, h1) == pytest.approx((1 / 2, 1 / 4))


def test_estimates_and_mancl_derouen_errors_match_the_hand_computation() -> None:
    beta, cov = _hand_mancl_derouen(CLUSTERS)
    res = gee_logit(_rows(CLUSTERS), "duplicate ~ C(arm)", "template")
    assert isinstance(res, GeeResult)
    assert res.terms == ["Intercept", ARM_TERM]
    assert (res.groups, res.df, res.n) == (6, 5, 24)
    assert res.params["Intercept"] == pytest.approx(math.log(3 / 5), rel=1e-6)
    assert res.params[ARM_TERM] == pytest.approx(math.log(25 / 9), rel=1e-6)
    assert [res.params["Intercept"], res.params[ARM_TERM]] == pytest.approx(beta, rel=1e-6)
    assert res.se["Intercept"] == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-6)
    assert res.se[ARM_TERM] == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-6)
    assert res.odds_ratio[ARM_TERM] == pytest.approx(25 / 9, rel=1e-6)


def test_bias_reduction_inflates_the_plain_sandwich() -> None:
    # The plain (Liang–Zeger) sandwich is the same closed form without 1/(1 − h)²; with leverages
    # of 1/2 and 1/4 the Mancl–DeRouen variance must be strictly larger.
    _, cov_md = _hand_mancl_derouen(CLUSTERS)
    res = gee_logit(_rows(CLUSTERS), "duplicate ~ C(arm)", "template")
    beta, _ = _hand_mancl_derouen(CLUSTERS)
    mu = {0: 3 / 8, 1: 5 / 8}
    xs = {n: np.array([1.0, float(arm)]) for n, (arm, _) in CLUSTERS.items()}
    big_a = sum(
        mu[arm] * (1 - mu[arm]) * np.outer(xs[n], xs[n]) for n, (arm, _) in CLUSTERS.items()
    )
    inv = np.linalg.inv(big_a)
    meat = sum(
        np.outer(xs[n], xs[n]) * sum(y - mu[arm] for y in ys) ** 2
        for n, (arm, ys) in CLUSTERS.items()
    )
    plain = inv @ meat @ inv / 16
    assert res.se[ARM_TERM] > math.sqrt(plain[1, 1]) * 1.1
    assert res.se[ARM_TERM] == pytest.approx(math.sqrt(cov_md[1, 1]), rel=1e-6)
    assert beta[1] == pytest.approx(res.params[ARM_TERM], rel=1e-6)


def test_intervals_and_pvalues_use_t_on_g_minus_1_degrees_of_freedom() -> None:
    res = gee_logit(_rows(CLUSTERS), "duplicate ~ C(arm)", "template")
    for term in res.terms:
        b, se = res.params[term], res.se[term]
        assert (math.log(res.ci_high[term]) - b) / se == pytest.approx(T_975_DF5, abs=1e-4)
        assert (b - math.log(res.ci_low[term])) / se == pytest.approx(T_975_DF5, abs=1e-4)
        assert res.pvalue[term] == pytest.approx(_t5_two_sided_p(b / se), rel=1e-9)
    # A normal reference would give a narrower interval: t(5) is the small-sample one.
    assert (math.log(res.ci_high[ARM_TERM]) - res.params[ARM_TERM]) / res.se[ARM_TERM] > 2.5


def test_confidence_level_is_a_parameter() -> None:
    res = gee_logit(_rows(CLUSTERS), "duplicate ~ C(arm)", "template", confidence=0.90)
    b, se = res.params[ARM_TERM], res.se[ARM_TERM]
    # t(5) upper 5 % point 2.0150 (t table).
    assert (math.log(res.ci_high[ARM_TERM]) - b) / se == pytest.approx(2.0150, abs=1e-4)


def test_bool_outcomes_give_the_same_fit_as_integers() -> None:
    as_bool = [{**row, "duplicate": bool(row["duplicate"])} for row in _rows(CLUSTERS)]
    assert gee_logit(as_bool, "duplicate ~ C(arm)", "template") == gee_logit(
        _rows(CLUSTERS), "duplicate ~ C(arm)", "template"
    )


def test_recovers_a_known_odds_ratio_with_many_templates() -> None:
    rng = np.random.default_rng(8)
    rows = []
    for template in range(30):
        u = rng.normal(0.0, 0.5)
        for i in range(60):
            x = i % 2
            p = 1 / (1 + math.exp(-(-1.0 + u + math.log(3.0) * x)))
            rows.append({"template": f"t{template}", "eventual": x, "dup": int(rng.random() < p)})
    res = gee_logit(rows, "dup ~ eventual", "template")
    assert res.groups == 30 and res.df == 29
    assert res.ci_low["eventual"] < 3.0 < res.ci_high["eventual"]
    assert res.pvalue["eventual"] < 1e-6
    assert res.correlation is not None and -1.0 < res.correlation < 1.0


def test_a_single_cluster_is_an_error() -> None:
    rows = [row for row in _rows(CLUSTERS) if row["template"] == "t2"] + [
        {"template": "t2", "arm": "a", "duplicate": 0}
    ]
    with pytest.raises(ValueError, match=r"at least two clusters of 'template', got 1"):
        gee_logit(rows, "duplicate ~ C(arm)", "template")


def _rows_by_level(clusters: dict[str, tuple[int, list[int]]]) -> list[dict[str, Any]]:
    """Like _rows but clusters may differ in size and there may be more than two arms."""
    return [
        {"template": name, "arm": "abc"[arm], "duplicate": y}
        for name, (arm, outcomes) in clusters.items()
        for y in outcomes
    ]


@pytest.mark.parametrize(
    ("clusters", "alone"),
    [
        # One cluster per arm: each cluster alone determines its arm's estimate.
        ({"t0": CLUSTERS["t1"], "t2": CLUSTERS["t2"]}, "t0"),
        # The only cluster of arm b among several of arm a.
        ({"t0": CLUSTERS["t0"], "t1": CLUSTERS["t1"], "t2": CLUSTERS["t2"]}, "t2"),
        # Unequal cluster sizes: I − H_ii is singular in exact arithmetic, but a floating-point
        # fit comes out a rounding away from singular and prints an interval of 1e-2 to 1e2.
        (
            {"t0": (0, [1, 0, 0, 0, 1]), "t1": (0, [1, 1, 0]), "t2": (1, [1, 1, 0, 1, 0, 0, 1])},
            "t2",
        ),
        # Three arms, the third with one cluster of its own.
        (
            {
                "t0": (0, [1, 0, 0, 0]),
                "t1": (0, [1, 1, 0, 0]),
                "t2": (1, [1, 1, 1, 0]),
                "t3": (1, [0, 1, 1, 0]),
                "t4": (2, [0, 1, 0, 0, 1]),
            },
            "t4",
        ),
    ],
    ids=["one-per-arm", "single-in-one-arm", "unequal-sizes", "three-arms"],
)
def test_a_cluster_with_leverage_one_is_an_error(
    clusters: dict[str, tuple[int, list[int]]], alone: str
) -> None:
    # Leverage 1 is a property of the design (without the cluster a coefficient is unidentified),
    # so it is refused whatever the rounding of the fit, and the error names the cluster.
    with pytest.raises(ValueError, match=f"cluster '{alone}' has leverage 1"):
        gee_logit(_rows_by_level(clusters), "duplicate ~ C(arm)", "template")


def test_leverages_below_one_are_fitted() -> None:
    # Every arm has at least two clusters: the largest leverage is 1/2 and the fit goes ahead.
    clusters = {**CLUSTERS, "t6": (2, [1, 0, 0, 1]), "t7": (2, [0, 1, 0, 0, 1, 1])}
    res = gee_logit(_rows_by_level(clusters), "duplicate ~ C(arm)", "template")
    assert res.groups == 8
    assert all(math.isfinite(res.se[t]) and res.se[t] > 0 for t in res.terms)


def test_separation_is_an_error() -> None:
    clusters = {name: (arm, [0] * 4 if arm == 0 else ys) for name, (arm, ys) in CLUSTERS.items()}
    with pytest.raises(ValueError, match=r"separation.*infinite"):
        gee_logit(_rows(clusters), "duplicate ~ C(arm)", "template")


@pytest.mark.parametrize("value", [0, 1])
def test_constant_outcome_is_an_error(value: int) -> None:
    rows = [{**row, "duplicate": value} for row in _rows(CLUSTERS)]
    with pytest.raises(ValueError, match=f"is {value} in all 24 rows"):
        gee_logit(rows, "duplicate ~ C(arm)", "template")


def test_collinear_terms_are_an_error() -> None:
    rows = [{**row, "copy": row["arm"]} for row in _rows(CLUSTERS)]
    with pytest.raises(ValueError, match="rank"):
        gee_logit(rows, "duplicate ~ C(arm) + C(copy)", "template")


def test_a_single_level_factor_is_absorbed_by_the_intercept() -> None:
    rows = [{**row, "harness": "minimal"} for row in _rows(CLUSTERS)]
    res = gee_logit(rows, "duplicate ~ C(arm) + C(harness)", "template")
    assert res.terms == ["Intercept", ARM_TERM]


@pytest.mark.parametrize(
    ("rows", "formula", "cluster", "message"),
    [
        ([], "duplicate ~ C(arm)", "template", "no rows"),
        (_rows(CLUSTERS), "duplicate ~ C(arm)", "tmpl", "row 0 has no value for field 'tmpl'"),
        (_rows(CLUSTERS), "duplicate ~ C(model)", "template", r"cannot build.*fields: arm"),
        (_rows(CLUSTERS), "C(arm)", "template", "form 'outcome ~ terms'"),
        (_rows(CLUSTERS), "duplicate + arm ~ 1", "template", "must be one 0/1 field"),
        (
            [{**r, "duplicate": 3} for r in _rows(CLUSTERS)],
            "duplicate ~ C(arm)",
            "template",
            "outcome 'duplicate' must be binary",
        ),
        (
            [*_rows(CLUSTERS)[:-1], {"template": "t5", "duplicate": 0}],
            "duplicate ~ C(arm)",
            "template",
            "row 23 has no value for field 'arm'",
        ),
    ],
)
def test_bad_input_is_a_clear_error(
    rows: list[dict[str, Any]], formula: str, cluster: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        gee_logit(rows, formula, cluster)


def test_confidence_outside_the_unit_interval_is_an_error() -> None:
    with pytest.raises(ValueError, match="confidence must lie in"):
        gee_logit(_rows(CLUSTERS), "duplicate ~ C(arm)", "template", confidence=1.0)


def test_separation_is_named_and_nothing_is_printed() -> None:
    """A model that always duplicates: its odds ratio is infinite. The error says separation
    and names the term (it used to say "too few clusters per term"), and no numerical warning
    of the failed fit reaches the terminal."""
    import random
    import warnings

    rng = random.Random(1)
    rows = [{"duplicate": flag, "weak": w, "model": m, "template": f"t{t}"}
            for t in range(12) for _ in range(5)
            for flag, w, m in ((int(rng.random() < 0.4), 0, "m1"),
                               (int(rng.random() < 0.5), 1, "m2"), (1, t % 2, "m3"))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=r"separation .*C\(model\)\[T\.m3\] = 1"):
            gee_logit(rows, "duplicate ~ weak + C(model)", cluster="template")
    assert caught == []
