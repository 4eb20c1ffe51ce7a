"""Shapley decomposition of McFadden's pseudo-R² against closed forms.

When a logistic model can reproduce every cell proportion (one factor; or two factors whose cell
log-odds are additive), its maximum-likelihood fitted probabilities are the observed cell
proportions, so its log-likelihood — and McFadden's R² = 1 − log L / log L₀ — is a closed form
Σ_cells [k log p + (n − k) log(1 − p)] with 0 log 0 = 0 (McFadden 1974; the saturated-model
argument is standard, e.g. Agresti 2013, *Categorical Data Analysis*). The Shapley value of two
factors is then ½ R²(A) + ½ (R²(AB) − R²(B)) (Shapley 1953), all by hand.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import pytest

from limbo_plugin.stats import ShapleyResult, shapley_pseudo_r2
from limbo_plugin.stats.shapley import shapley_values


def _loglik(cells: Iterable[tuple[int, int]]) -> float:
    """Σ k log(k/n) + (n − k) log(1 − k/n) over (events, size) cells, with 0 log 0 = 0."""
    total = 0.0
    for k, n in cells:
        if k > 0:
            total += k * math.log(k / n)
        if k < n:
            total += (n - k) * math.log((n - k) / n)
    return total


def _r2(cells: Iterable[tuple[int, int]], pooled: tuple[int, int]) -> float:
    return 1.0 - _loglik(cells) / _loglik([pooled])


def _rows(
    cells: Mapping[tuple[str, ...], tuple[int, int]], names: tuple[str, ...]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for levels, (k, n) in cells.items():
        base = dict(zip(names, levels, strict=True))
        rows += [{**base, "dup": 1} for _ in range(k)]
        rows += [{**base, "dup": 0} for _ in range(n - k)]
    random.Random(0).shuffle(rows)
    return rows


# --- the Shapley value itself -------------------------------------------------------------------


def test_shapley_values_of_a_weighted_voting_game() -> None:
    # Quota 3, weights (2, 1, 1): the Shapley–Shubik index is (2/3, 1/6, 1/6) (Shapley & Shubik
    # 1954): A is pivotal in 4 of the 6 orders of entry, B and C in one each.
    weights = {"A": 2, "B": 1, "C": 1}
    players = ["A", "B", "C"]
    worth = {}
    for mask in range(8):
        coalition = frozenset(p for i, p in enumerate(players) if mask >> i & 1)
        worth[coalition] = 1.0 if sum(weights[p] for p in coalition) >= 3 else 0.0
    values = shapley_values(players, worth)
    assert values == pytest.approx({"A": 2 / 3, "B": 1 / 6, "C": 1 / 6})


# --- McFadden R² and its decomposition ----------------------------------------------------------


def test_one_binary_factor_matches_the_closed_form() -> None:
    # Level a: 10/40, level b: 30/60; pooled 40/100.
    rows = _rows({("a",): (10, 40), ("b",): (30, 60)}, ("model",))
    expected = _r2([(10, 40), (30, 60)], (40, 100))
    res = shapley_pseudo_r2(rows, "dup", ["model"])
    assert isinstance(res, ShapleyResult)
    assert res.r2 == pytest.approx(expected, rel=1e-9)
    assert res.contributions == pytest.approx({"model": expected}, rel=1e-9)
    assert res.shares == pytest.approx({"model": 1.0})
    assert res.n == 100


# Cell odds 1, 2, 3, 6: log-odds 0, log 2, log 3, log 2 + log 3 are additive in A and B, so the
# main-effects model is saturated. Unequal cell sizes make the factors correlated.
ADDITIVE: dict[tuple[str, ...], tuple[int, int]] = {
    ("a0", "b0"): (42, 84),  # p = 1/2
    ("a0", "b1"): (112, 168),  # p = 2/3
    ("a1", "b0"): (189, 252),  # p = 3/4
    ("a1", "b1"): (72, 84),  # p = 6/7
}


def _additive_expectations(cells: Mapping[tuple[str, ...], tuple[int, int]]) -> dict[str, float]:
    def margin(index: int) -> list[tuple[int, int]]:
        sums: dict[str, list[int]] = {}
        for levels, (k, n) in cells.items():
            acc = sums.setdefault(levels[index], [0, 0])
            acc[0] += k
            acc[1] += n
        return [(k, n) for k, n in sums.values()]

    pooled = (sum(k for k, _ in cells.values()), sum(n for _, n in cells.values()))
    r2_a = _r2(margin(0), pooled)
    r2_b = _r2(margin(1), pooled)
    r2_ab = _r2(cells.values(), pooled)
    return {
        "A": r2_a,
        "B": r2_b,
        "AB": r2_ab,
        "phi_A": 0.5 * r2_a + 0.5 * (r2_ab - r2_b),
        "phi_B": 0.5 * r2_b + 0.5 * (r2_ab - r2_a),
    }


def test_two_factors_match_the_four_hand_computed_fits() -> None:
    # The additivity of the design, checked with exact fractions: odds(a1b1)/odds(a1b0) equals
    # odds(a0b1)/odds(a0b0).
    odds = {key: Fraction(k, n - k) for key, (k, n) in ADDITIVE.items()}
    assert odds["a1", "b1"] / odds["a1", "b0"] == odds["a0", "b1"] / odds["a0", "b0"] == 2
    expected = _additive_expectations(ADDITIVE)
    res = shapley_pseudo_r2(_rows(ADDITIVE, ("fault", "model")), "dup", ["fault", "model"])
    assert res.subset_r2[()] == 0.0
    assert res.subset_r2[("fault",)] == pytest.approx(expected["A"], rel=1e-9)
    assert res.subset_r2[("model",)] == pytest.approx(expected["B"], rel=1e-9)
    assert res.r2 == pytest.approx(expected["AB"], rel=1e-8)
    assert res.contributions["fault"] == pytest.approx(expected["phi_A"], rel=1e-7)
    assert res.contributions["model"] == pytest.approx(expected["phi_B"], rel=1e-7)
    assert sum(res.shares.values()) == pytest.approx(1.0)
    assert res.shares["fault"] == pytest.approx(expected["phi_A"] / expected["AB"], rel=1e-7)


def test_factor_order_does_not_change_the_decomposition() -> None:
    rows = _rows(ADDITIVE, ("fault", "model"))
    one = shapley_pseudo_r2(rows, "dup", ["fault", "model"])
    other = shapley_pseudo_r2(rows, "dup", ["model", "fault"])
    assert one.contributions == pytest.approx(other.contributions, rel=1e-12)


def test_separation_uses_the_supremum_of_the_likelihood() -> None:
    # A level with 0 % and one with 100 %: the coefficients diverge, the log-likelihood converges
    # to the closed form with 0 log 0 = 0.
    cells: dict[tuple[str, ...], tuple[int, int]] = {
        ("idem",): (0, 50),
        ("keyed",): (5, 50),
        ("none",): (20, 50),
        ("post",): (30, 30),
    }
    rows = _rows(cells, ("contract",))
    expected = _r2(cells.values(), (55, 180))
    res = shapley_pseudo_r2(rows, "dup", ["contract"])
    assert res.r2 == pytest.approx(expected, rel=1e-7)


def test_separation_alongside_a_second_factor() -> None:
    # A third level of A with no events in either B cell: its coefficient runs to −∞ whatever B
    # does, so the main-effects model is still saturated and the closed forms hold.
    cells: dict[tuple[str, ...], tuple[int, int]] = {
        **ADDITIVE,
        ("a2", "b0"): (0, 60),
        ("a2", "b1"): (0, 30),
    }
    expected = _additive_expectations(cells)
    res = shapley_pseudo_r2(_rows(cells, ("fault", "model")), "dup", ["fault", "model"])
    assert res.r2 == pytest.approx(expected["AB"], rel=1e-7)
    assert res.contributions["fault"] == pytest.approx(expected["phi_A"], rel=1e-6)
    assert res.contributions["model"] == pytest.approx(expected["phi_B"], rel=1e-6)


def test_single_level_factor_contributes_exactly_zero() -> None:
    rows = [{**row, "harness": "minimal"} for row in _rows(ADDITIVE, ("fault", "model"))]
    with_harness = shapley_pseudo_r2(rows, "dup", ["fault", "harness", "model"])
    without = shapley_pseudo_r2(rows, "dup", ["fault", "model"])
    assert with_harness.contributions["harness"] == 0.0
    assert with_harness.r2 == without.r2
    assert with_harness.contributions["fault"] == pytest.approx(without.contributions["fault"])
    assert with_harness.shares["harness"] == 0.0


def test_identical_factors_split_their_share_equally() -> None:
    # Symmetry axiom: two copies of one factor are interchangeable, so each gets half; the
    # duplicated columns make the joint design rank-deficient, which must not change the fit.
    rows = [{**row, "alias": row["fault"]} for row in _rows(ADDITIVE, ("fault", "model"))]
    res = shapley_pseudo_r2(rows, "dup", ["fault", "alias"])
    r2_a = _additive_expectations(ADDITIVE)["A"]
    assert res.r2 == pytest.approx(r2_a, rel=1e-9)
    assert res.contributions["fault"] == pytest.approx(r2_a / 2, rel=1e-9)
    assert res.contributions["alias"] == pytest.approx(r2_a / 2, rel=1e-9)


def test_a_factor_that_explains_nothing_has_r2_zero_and_no_shares() -> None:
    rows = _rows({("a",): (10, 40), ("b",): (5, 20), ("c",): (15, 60)}, ("model",))
    res = shapley_pseudo_r2(rows, "dup", ["model"])
    assert res.r2 == 0.0
    assert res.contributions == {"model": 0.0}
    assert res.shares == {}


def test_contributions_sum_to_r2_with_four_unbalanced_factors() -> None:
    rng = random.Random(2)
    rows = []
    for _ in range(3000):
        model, contract = rng.choice("abcd"), rng.choice(["keyed", "strong", "eventual"])
        fault, harness = rng.choice(["lost", "late"]), rng.choice(["min", "cli"])
        p = {"keyed": 0.05, "strong": 0.25, "eventual": 0.35}[contract]
        p *= 1.8 if model == "d" else 1.0
        p *= 1.3 if fault == "late" else 1.0
        rows.append(
            {
                "model": model,
                "contract": contract,
                "fault": fault,
                "harness": harness,
                "dup": rng.random() < p,
            }
        )
    factors = ["model", "contract", "fault", "harness"]
    res = shapley_pseudo_r2(rows, "dup", factors)
    assert len(res.subset_r2) == 16
    assert sum(res.contributions.values()) == pytest.approx(res.r2, rel=1e-12)
    assert sum(res.shares.values()) == pytest.approx(1.0, rel=1e-12)
    assert max(res.contributions, key=res.contributions.__getitem__) == "contract"
    # The harness is irrelevant by construction: its share is small.
    assert res.shares["harness"] < 0.05
    # Cross-check of the full model's R² with an independent fit (Newton's method in
    # statsmodels' Logit, with its own null model) on one-row-per-episode data.
    sm = pytest.importorskip("statsmodels.formula.api")
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(rows).assign(dup=lambda f: f["dup"].astype(int))
    logit = sm.logit("dup ~ C(model) + C(contract) + C(fault) + C(harness)", frame).fit(disp=False)
    assert res.r2 == pytest.approx(logit.prsquared, rel=1e-8)


@pytest.mark.parametrize("value", [0, 1])
def test_constant_outcome_is_an_error(value: int) -> None:
    rows = [{"model": m, "dup": value} for m in "abab"]
    with pytest.raises(ValueError, match=f"is {value} in all 4 rows.*undefined"):
        shapley_pseudo_r2(rows, "dup", ["model"])


@pytest.mark.parametrize(
    ("rows", "factors", "message"),
    [
        ([], ["model"], "no rows"),
        ([{"model": "a", "dup": 1}], [], "at least one field"),
        ([{"model": "a", "dup": 1}], ["model", "model"], "must be distinct"),
        ([{"model": "a", "dup": 1}], ["dup"], "cannot also be a factor"),
        ([{"model": "a", "dup": 1}, {"dup": 0}], ["model"], "row 1 has no value for field 'model'"),
        ([{"model": None, "dup": 1}], ["model"], "row 0 has no value for field 'model'"),
        ([{"model": "a", "dup": 2}], ["model"], "outcome 'dup' must be binary"),
    ],
)
def test_bad_input_is_a_clear_error(
    rows: list[dict[str, Any]], factors: list[str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        shapley_pseudo_r2(rows, "dup", factors)
