"""McNemar, paired counts, Holm and TOST against scipy/statsmodels and hand computations."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import binomtest, norm

from limbo_plugin.stats import (
    TostResult,
    holm,
    mcnemar_exact,
    paired_counts,
    tost_paired_difference,
)

contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
multitest = pytest.importorskip("statsmodels.stats.multitest")


# --- McNemar ------------------------------------------------------------------------------------


def test_mcnemar_matches_statsmodels_exact() -> None:
    for b in range(0, 31):
        for c in range(0, 31):
            if b + c == 0:
                continue
            ref = contingency.mcnemar([[7, b], [c, 11]], exact=True).pvalue
            assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_mcnemar_matches_scipy_binomtest_for_large_counts() -> None:
    for b, c in [(120, 80), (5, 300), (250, 250), (1000, 900)]:
        ref = binomtest(b, b + c, 0.5).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-12)


def test_mcnemar_beyond_the_exact_sum_matches_scipy() -> None:
    """Over 10,000 discordant pairs the tail is summed in floats (the exact sum slows down
    quadratically); it stays within 1e-9 of scipy's binomial test."""
    for b, c in [(6000, 5000), (50000, 49000), (49900, 50100), (5011, 4990), (300, 20000)]:
        ref = binomtest(b, b + c, 0.5).pvalue
        assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_mcnemar_hand_values() -> None:
    # b = 0, c = 5: 2 · (1/2)^5 = 1/16.
    assert mcnemar_exact(0, 5) == pytest.approx(1 / 16)
    # b = 1, c = 6: 2 · (1 + 7) / 128 = 1/8.
    assert mcnemar_exact(1, 6) == pytest.approx(1 / 8)


def test_mcnemar_symmetric_and_no_discordance() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(4, 4) == 1.0
    assert mcnemar_exact(3, 9) == mcnemar_exact(9, 3)


@pytest.mark.parametrize(("b", "c"), [(-1, 2), (2, -1), (1.5, 2), (True, 2)])
def test_mcnemar_rejects_bad_counts(b: int, c: int) -> None:
    with pytest.raises(ValueError):
        mcnemar_exact(b, c)


# --- paired counts ------------------------------------------------------------------------------


def test_paired_counts_layout() -> None:
    pairs = [(True, True)] * 3 + [(True, False)] * 5 + [(False, True)] * 2 + [(False, False)] * 7
    assert paired_counts(pairs) == (3, 5, 2, 7)
    assert paired_counts([]) == (0, 0, 0, 0)
    assert paired_counts(iter([(1, 0), (0, 1), (0, 1)])) == (0, 1, 2, 0)


def test_paired_counts_feed_mcnemar_like_statsmodels() -> None:
    rng = random.Random(3)
    pairs = [(rng.random() < 0.4, rng.random() < 0.25) for _ in range(200)]
    a, b, c, d = paired_counts(pairs)
    ref = contingency.mcnemar([[a, b], [c, d]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(ref)


# --- Holm ---------------------------------------------------------------------------------------


def test_holm_matches_statsmodels() -> None:
    # One call on one large family: multipletests runs gc.collect() on every call, so a loop over
    # many families costs seconds without checking anything more.
    rng = random.Random(5)
    ps = [rng.random() ** 3 for _ in range(60)] + [0.5, 0.5, 1.0, 0.0]
    ref = multitest.multipletests(ps, method="holm")[1]
    assert holm(ps) == pytest.approx(list(ref), rel=1e-12)


def test_holm_hand_example_four_tests() -> None:
    # Holm (1979) step-down by hand: sorted 0.001, 0.01, 0.03, 0.04 → ×4, ×3, ×2, ×1
    # = 0.004, 0.03, 0.06, 0.04 → running max 0.004, 0.03, 0.06, 0.06.
    assert holm([0.03, 0.001, 0.04, 0.01]) == pytest.approx([0.06, 0.004, 0.06, 0.03])


def test_holm_hand_example_with_ties_and_cap() -> None:
    # Sorted 0.01, 0.02, 0.02, 0.04, 0.5 → ×5, ×4, ×3, ×2, ×1 → 0.05, 0.08, 0.06, 0.08, 0.5
    # running max → 0.05, 0.08, 0.08, 0.08, 0.5.
    ps = [0.04, 0.01, 0.5, 0.02, 0.02]
    assert holm(ps) == pytest.approx([0.08, 0.05, 0.5, 0.08, 0.08])
    assert holm([0.3, 0.4, 0.9]) == pytest.approx([0.9, 0.9, 0.9])
    assert holm([0.6, 0.7]) == [1.0, 1.0]


def test_holm_is_monotone_in_raw_pvalues_and_bounded() -> None:
    rng = random.Random(9)
    ps = [rng.random() for _ in range(40)]
    adj = holm(ps)
    ordered = [a for _, a in sorted(zip(ps, adj, strict=True))]
    assert ordered == sorted(ordered)
    assert all(p <= a <= 1.0 for p, a in zip(ps, adj, strict=True))


def test_holm_edge_cases() -> None:
    assert holm([]) == []
    assert holm([0.03]) == [0.03]
    assert holm((0.0, 1.0)) == [0.0, 1.0]
    for bad in ([0.1, 1.2], [-0.1], [math.nan]):
        with pytest.raises(ValueError):
            holm(bad)


# --- TOST ---------------------------------------------------------------------------------------


def _pairs(a: int, b: int, c: int, d: int) -> tuple[list[int], list[int]]:
    x = [1] * a + [1] * b + [0] * c + [0] * d
    y = [1] * a + [0] * b + [1] * c + [0] * d
    return x, y


def test_tost_equal_proportions_large_n_is_equivalent() -> None:
    x, y = _pairs(300, 100, 100, 1500)  # 2000 pairs, both rates 20 %
    res = tost_paired_difference(x, y)
    assert isinstance(res, TostResult)
    assert res.diff == 0.0
    assert res.equivalent
    assert res.pvalue < 0.05
    assert -0.05 < res.low < 0.0 < res.high < 0.05


def test_tost_identical_outcomes_is_equivalent() -> None:
    rng = random.Random(1)
    x = [int(rng.random() < 0.3) for _ in range(500)]
    res = tost_paired_difference(x, list(x))
    assert res.equivalent and res.diff == 0.0


def test_tost_twenty_point_difference_is_not_equivalent() -> None:
    x, y = _pairs(200, 500, 100, 1200)  # 2000 pairs: 35 % vs 15 %
    res = tost_paired_difference(x, y)
    assert res.diff == pytest.approx(0.2)
    assert not res.equivalent
    assert res.pvalue > 0.5
    assert res.low > 0.05


def test_tost_small_n_is_inconclusive() -> None:
    x, y = _pairs(3, 2, 2, 13)  # 20 pairs, no observed difference, far too few to conclude
    res = tost_paired_difference(x, y)
    assert res.diff == 0.0
    assert not res.equivalent


def test_tost_hand_computed_agresti_min() -> None:
    # n = 100, b = 9, c = 4 → n* = 102, δ* = 5/102, se* = sqrt((14/102 − δ*²)/102).
    x, y = _pairs(10, 9, 4, 77)
    res = tost_paired_difference(x, y, margin=0.05, alpha=0.05)
    d = 5 / 102
    se = math.sqrt((14 / 102 - d * d) / 102)
    z = norm.ppf(0.95)
    assert res.diff == pytest.approx(0.05)
    assert (res.low, res.high) == pytest.approx((d - z * se, d + z * se))
    assert res.p_lower == pytest.approx(norm.sf((d + 0.05) / se))
    assert res.p_upper == pytest.approx(norm.cdf((d - 0.05) / se))
    assert res.pvalue == max(res.p_lower, res.p_upper)
    assert res.n == 100


def test_tost_pvalue_and_interval_are_dual() -> None:
    rng = random.Random(21)
    for _ in range(300):
        n = rng.randint(5, 3000)
        x = [int(rng.random() < 0.3) for _ in range(n)]
        y = [
            xi if rng.random() < 0.8 else int(rng.random() < 0.3 + rng.uniform(-0.1, 0.1))
            for xi in x
        ]
        margin = rng.choice([0.02, 0.05, 0.1])
        alpha = rng.choice([0.01, 0.05, 0.1])
        res = tost_paired_difference(x, y, margin=margin, alpha=alpha)
        inside = -margin < res.low and res.high < margin
        assert res.equivalent == inside == (res.pvalue < alpha)


def test_tost_no_discordant_pairs_has_positive_width() -> None:
    res = tost_paired_difference([1, 0, 1, 0], [1, 0, 1, 0])
    assert res.high > res.low
    assert not math.isnan(res.pvalue)


def test_tost_interval_level_is_one_minus_two_alpha() -> None:
    x, y = _pairs(50, 30, 20, 400)
    narrow = tost_paired_difference(x, y, alpha=0.10)
    wide = tost_paired_difference(x, y, alpha=0.025)
    assert wide.low < narrow.low and wide.high > narrow.high
    ratio = (wide.high - wide.low) / (narrow.high - narrow.low)
    assert ratio == pytest.approx(norm.ppf(0.975) / norm.ppf(0.90))


def test_tost_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        tost_paired_difference([1, 0], [1])
    with pytest.raises(ValueError):
        tost_paired_difference([], [])
    with pytest.raises(ValueError):
        tost_paired_difference([1, 2], [1, 0])
    with pytest.raises(ValueError):
        tost_paired_difference([1, 0], [1, 0], margin=0.0)
    with pytest.raises(ValueError):
        tost_paired_difference([1, 0], [1, 0], alpha=0.5)
