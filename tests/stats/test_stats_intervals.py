"""Wilson, ICC, Kish and the per-cell rate against references and hand computations."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from scipy.stats import f_oneway

from limbo_plugin.stats import (
    RateEstimate,
    icc_binary,
    icc_within_cells,
    kish_effective_n,
    rate_with_interval,
    wilson_interval,
)

proportion = pytest.importorskip("statsmodels.stats.proportion")


# --- Wilson -------------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels_on_integer_counts(confidence: float) -> None:
    for n in range(1, 61):
        for k in range(n + 1):
            low, high = wilson_interval(k, n, confidence)
            ref_low, ref_high = proportion.proportion_confint(
                k, n, alpha=1 - confidence, method="wilson"
            )
            assert low == pytest.approx(ref_low, abs=1e-12)
            assert high == pytest.approx(ref_high, abs=1e-12)


def test_wilson_matches_statsmodels_on_fractional_counts() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.uniform(0.3, 500.0)
        k = rng.uniform(0.0, n)
        low, high = wilson_interval(k, n)
        ref_low, ref_high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
        assert low == pytest.approx(ref_low, abs=1e-12)
        assert high == pytest.approx(ref_high, abs=1e-12)


def test_wilson_large_n() -> None:
    low, high = wilson_interval(123_456, 1_000_000)
    ref = proportion.proportion_confint(123_456, 1_000_000, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-12)


def test_wilson_empty_cell_is_the_unit_interval() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0.0, 0.0, 0.9) == (0.0, 1.0)


def test_wilson_bounds_are_pinned_at_zero_and_one() -> None:
    for n in (1, 3, 17, 1000, 0.37, 12.5):
        low, _ = wilson_interval(0, n)
        _, high = wilson_interval(n, n)
        assert low == 0.0
        assert high == 1.0


def test_wilson_contains_point_estimate_and_narrows_with_n() -> None:
    widths = []
    for n in (10, 100, 1000):
        low, high = wilson_interval(0.3 * n, n)
        assert low < 0.3 < high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]


def test_wilson_is_wider_at_higher_confidence() -> None:
    lo90, hi90 = wilson_interval(4, 20, 0.90)
    lo99, hi99 = wilson_interval(4, 20, 0.99)
    assert lo99 < lo90 and hi99 > hi90


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [
        (-1, 10, 0.95),
        (11, 10, 0.95),
        (1, -1, 0.95),
        (1, 10, 0.0),
        (1, 10, 1.0),
        (math.nan, 10, 0.95),
        (1, math.inf, 0.95),
    ],
)
def test_wilson_rejects_bad_input(successes: float, n: float, confidence: float) -> None:
    with pytest.raises(ValueError):
        wilson_interval(successes, n, confidence)


# --- ICC ----------------------------------------------------------------------------------------


def test_icc_hand_computed_unbalanced_example() -> None:
    # A = [1,1,0], B = [0,0,0,1], C = [1,1]; N = 9, k = 3, grand mean 5/9.
    # SSB = 3(1/9)² + 4(11/36)² + 2(4/9)² = 29/36, MSB = 29/72.
    # SSW = 3·(2/3)(1/3) + 4·(1/4)(3/4) + 0 = 17/12, MSW = 17/72.
    # n0 = (9 − 29/9) / 2 = 26/9.
    # ρ = (29/72 − 17/72) / (29/72 + (17/9)(17/72)) = 108/550 = 54/275.
    data = {"A": [1, 1, 0], "B": [0, 0, 0, 1], "C": [1, 1]}
    msb, msw, n0 = Fraction(29, 72), Fraction(17, 72), Fraction(26, 9)
    expected = (msb - msw) / (msb + (n0 - 1) * msw)
    assert expected == Fraction(54, 275)
    assert icc_binary(data) == pytest.approx(float(expected), rel=1e-12)


def test_icc_hand_computed_balanced_example() -> None:
    # Two clusters of 4: means 3/4 and 1/4, grand 1/2.
    # MSB = 4·(1/16)·2 / 1 = 1/2; MSW = 2·(4·3/16) / 6 = 1/4; n0 = 4.
    # ρ = (1/2 − 1/4) / (1/2 + 3/4) = 1/5.
    data = {"x": [True, True, True, False], "y": [False, False, True, False]}
    assert icc_binary(data) == pytest.approx(0.2, rel=1e-12)


def test_icc_agrees_with_anova_f_statistic() -> None:
    # Independent route: ρ = (F − 1) / (F + n0 − 1) with F from scipy's one-way ANOVA.
    rng = random.Random(11)
    checked = 0
    for _ in range(200):
        k = rng.randint(2, 12)
        data = {}
        for g in range(k):
            p = rng.random()
            data[f"t{g}"] = [int(rng.random() < p) for _ in range(rng.randint(2, 30))]
        groups = list(data.values())
        flat = [v for g in groups for v in g]
        if all(v == flat[0] for v in flat) or all(len(set(g)) == 1 for g in groups):
            continue
        f = f_oneway(*groups).statistic
        big_n = len(flat)
        n0 = (big_n - sum(len(g) ** 2 for g in groups) / big_n) / (k - 1)
        expected = max(0.0, (f - 1) / (f + n0 - 1))
        assert icc_binary(data) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        checked += 1
    assert checked > 150


def test_icc_perfectly_clustered_outcomes_is_one() -> None:
    data = {f"t{i}": [i % 2] * 10 for i in range(12)}
    assert icc_binary(data) == pytest.approx(1.0)


def test_icc_nearly_perfectly_clustered_outcomes_is_near_one() -> None:
    data = {f"t{i}": [i % 2] * 50 for i in range(12)}
    data["t0"] = [1] + [0] * 49
    assert icc_binary(data) > 0.9


def test_icc_identical_cluster_means_is_zero() -> None:
    # Between-cluster mean square is 0, so the raw estimate is −1/(n0 − 1): truncated to 0.
    data = {"a": [1, 0, 1, 0], "b": [0, 1, 0, 1], "c": [1, 1, 0, 0]}
    assert icc_binary(data) == 0.0
    unbalanced = {"a": [1, 0], "b": [1, 1, 0, 0], "c": [0, 0, 0, 1, 1, 1]}
    assert icc_binary(unbalanced) == 0.0


def test_icc_is_truncated_at_zero_for_negative_estimates() -> None:
    data = {"a": [1, 0, 1], "b": [0, 1, 0], "c": [1, 0, 0, 1]}
    assert icc_binary(data) == 0.0


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"a": []},
        {"a": [0] * 10, "b": [0] * 7, "c": [0] * 3},  # no events
        {"a": [1] * 10, "b": [1] * 7},  # only events
        {"only": [1, 0, 1, 1, 0]},  # single cluster
        {"only": [1, 0], "empty": []},  # single non-empty cluster
        {"a": [1], "b": [0], "c": [1], "d": [0]},  # all clusters of size 1
    ],
)
def test_icc_degenerate_cells_return_zero(data: dict[str, list[int]]) -> None:
    assert icc_binary(data) == 0.0


def test_icc_singletons_alongside_larger_clusters_are_used() -> None:
    with_singletons = {"a": [1, 1, 1, 0], "b": [0, 0, 0, 1], "c": [1], "d": [0]}
    rho = icc_binary(with_singletons)
    assert 0.0 <= rho <= 1.0
    # Cross-check with the F route (scipy accepts groups of size 1).
    groups = list(with_singletons.values())
    f = f_oneway(*groups).statistic
    n0 = (10 - sum(len(g) ** 2 for g in groups) / 10) / 3
    assert rho == pytest.approx(max(0.0, (f - 1) / (f + n0 - 1)))


def test_icc_ignores_empty_clusters_and_accepts_bools() -> None:
    data = {"A": [True, True, False], "B": [False, False, False, True], "C": [True, True]}
    assert icc_binary({**data, "empty": []}) == pytest.approx(54 / 275)


def test_icc_rejects_non_binary_values() -> None:
    with pytest.raises(ValueError, match="binary"):
        icc_binary({"a": [0, 2], "b": [1, 0]})


# --- ρ within cells ---------------------------------------------------------------------------

FAMILY_EFFECT = [
    # late commits: templates t1 and t2 always duplicate, t3 half the time
    {"t1": [1, 1, 1, 1], "t2": [1, 1, 1, 1], "t3": [1, 1, 0, 0]},
    # lost acknowledgements: t1 and t2 never, t3 half the time
    {"t1": [0, 0, 0, 0], "t2": [0, 0, 0, 0], "t3": [1, 1, 0, 0]},
]


def test_icc_within_cells_by_hand_on_a_strong_family_effect() -> None:
    """Each cell centred on its own mean (0.833 and 0.167):
    SSB = 2 × (4·(1/6)² · 2 + 4·(1/3)²) = 4/3 on 2 × (3 − 1) = 4 df, MSB = 1/3;
    SSW = 2 × 4·¼ = 2 on 2 × (12 − 3) = 18 df, MSW = 1/9;
    n₀ = 2 × (12 − 48/12) / 4 = 4;  ρ = (1/3 − 1/9) / (1/3 + 3/9) = 1/3."""
    assert icc_within_cells(FAMILY_EFFECT) == pytest.approx(1 / 3, rel=1e-12)


def test_pooling_the_cells_takes_the_family_effect_for_noise() -> None:
    """Pooled over both families every template duplicates in 4 of 8 episodes: the estimator
    over the whole table (what the report used) finds no clustering at all."""
    pooled = {t: FAMILY_EFFECT[0][t] + FAMILY_EFFECT[1][t] for t in ("t1", "t2", "t3")}
    assert icc_binary(pooled) == 0.0
    assert icc_within_cells(FAMILY_EFFECT) > 0.3


def test_icc_within_one_cell_is_the_one_way_estimate() -> None:
    data = {"A": [1, 1, 0], "B": [0, 0, 0, 1], "C": [1, 1]}
    assert icc_within_cells([data]) == pytest.approx(icc_binary(data), rel=1e-12)


def test_icc_within_cells_skips_cells_without_replication() -> None:
    one_template = {"t1": [1, 0, 1]}  # adds within-template df only
    assert icc_within_cells([one_template]) == 0.0
    assert icc_within_cells([]) == 0.0
    assert icc_within_cells([{"t1": [1], "t2": [0]}]) == 0.0  # no within-template df
    with_it = icc_within_cells([*FAMILY_EFFECT, one_template, {}])
    # SSW + 2/3 on 2 more df: MSW = (2 + 2/3) / 20 = 2/15; ρ = (1/3 − 2/15) / (1/3 + 3·2/15)
    assert with_it == pytest.approx((1 / 3 - 2 / 15) / (1 / 3 + 6 / 15), rel=1e-12)


# --- Kish ---------------------------------------------------------------------------------------


def test_kish_reduces_n_when_icc_positive() -> None:
    assert kish_effective_n(120, 10, 0.1) == pytest.approx(120 / 1.9)
    assert kish_effective_n(120, 10, 0.1) < 120


def test_kish_is_n_without_clustering() -> None:
    assert kish_effective_n(120, 10, 0.0) == 120
    assert kish_effective_n(120, 1, 0.7) == 120


def test_kish_full_correlation_gives_number_of_clusters() -> None:
    assert kish_effective_n(120, 10, 1.0) == pytest.approx(12)


def test_kish_is_monotone_in_icc_and_cluster_size() -> None:
    values = [kish_effective_n(200, 8, r / 10) for r in range(11)]
    assert values == sorted(values, reverse=True)
    sizes = [kish_effective_n(200, m, 0.2) for m in (1, 2, 5, 20)]
    assert sizes == sorted(sizes, reverse=True)


def test_kish_empty_and_invalid() -> None:
    assert kish_effective_n(0, 0, 0.3) == 0.0
    for args in [(-1, 2, 0.1), (10, 2, -0.1), (10, 2, 1.1), (10, 0.5, 0.1)]:
        with pytest.raises(ValueError):
            kish_effective_n(*args)


# --- rate_with_interval -------------------------------------------------------------------------


def test_rate_without_clustering_is_plain_wilson() -> None:
    data = {"a": [1, 0, 0, 0], "b": [0, 1, 0], "c": [0, 0, 0, 0, 1]}
    est = rate_with_interval(data, icc=0.0)
    assert isinstance(est, RateEstimate)
    assert (est.k, est.n, est.icc) == (3, 12, 0.0)
    assert est.rate == pytest.approx(0.25)
    assert est.n_eff == 12
    assert (est.low, est.high) == pytest.approx(wilson_interval(3, 12))


def test_rate_with_given_icc_uses_kish_and_scaled_successes() -> None:
    data = {f"t{i}": [1, 0, 0, 0, 0] for i in range(12)}  # n = 60, m̄ = 5, k = 12
    est = rate_with_interval(data, icc=0.25, confidence=0.9)
    n_eff = 60 / (1 + 4 * 0.25)
    assert est.n_eff == pytest.approx(n_eff)
    assert est.rate == pytest.approx(0.2)
    assert (est.low, est.high) == pytest.approx(wilson_interval(0.2 * n_eff, n_eff, 0.9))
    plain = wilson_interval(12, 60, 0.9)
    assert est.low < plain[0] and est.high > plain[1]


def test_rate_estimates_icc_from_data_when_not_given() -> None:
    data = {"A": [1, 1, 0], "B": [0, 0, 0, 1], "C": [1, 1]}
    est = rate_with_interval(data)
    assert est.icc == pytest.approx(54 / 275)
    assert est.n_eff == pytest.approx(kish_effective_n(9, 3, 54 / 275))
    assert est.low < est.rate < est.high


def test_rate_mean_cluster_size_ignores_empty_clusters() -> None:
    data = {"a": [1, 0, 0, 0], "b": [0, 0, 1, 0], "empty": []}
    est = rate_with_interval(data, icc=0.5)
    assert est.n_eff == pytest.approx(kish_effective_n(8, 4, 0.5))


def test_rate_no_events_keeps_zero_lower_bound() -> None:
    data = {f"t{i}": [0] * 10 for i in range(12)}
    est = rate_with_interval(data, icc=0.3)
    assert est.k == 0 and est.rate == 0.0 and est.low == 0.0
    assert 0.0 < est.high < 1.0
    all_events = rate_with_interval({f"t{i}": [1] * 10 for i in range(12)}, icc=0.3)
    assert all_events.high == 1.0 and all_events.rate == 1.0


def test_rate_empty_cell() -> None:
    est = rate_with_interval({})
    assert est.k == 0 and est.n == 0 and est.n_eff == 0.0
    assert math.isnan(est.rate)
    assert (est.low, est.high) == (0.0, 1.0)
    assert rate_with_interval({"a": []}, icc=0.2).icc == 0.2


def test_rate_rejects_invalid_icc() -> None:
    with pytest.raises(ValueError):
        rate_with_interval({"a": [1, 0]}, icc=1.5)
    with pytest.raises(ValueError):
        rate_with_interval({}, icc=-0.1)
