"""TOST for two independent proportions against hand-computed Agresti–Caffo values."""

from __future__ import annotations

import math
import random

import pytest

from limbo_plugin.stats import TostResult, tost_independent

Z95 = 1.6448536269514722  # one-sided 95 % normal percentage point (normal tables)


def _sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def _outcomes(k: int, n: int) -> list[int]:
    return [1] * k + [0] * (n - k)


def test_hand_computed_agresti_caffo() -> None:
    # 30/200 against 25/200. Agresti & Caffo (2000) add one success and one failure to each
    # sample: p̃1 = 31/202, p̃2 = 26/202, δ̃ = 5/202, se² = Σ p̃(1 − p̃)/202.
    res = tost_independent(_outcomes(30, 200), _outcomes(25, 200), margin=0.05, alpha=0.05)
    p1, p2 = 31 / 202, 26 / 202
    d = p1 - p2
    se = math.sqrt(p1 * (1 - p1) / 202 + p2 * (1 - p2) / 202)
    assert isinstance(res, TostResult)
    assert res.diff == pytest.approx(0.025)
    assert (res.low, res.high) == pytest.approx((d - Z95 * se, d + Z95 * se), rel=1e-9)
    assert res.p_lower == pytest.approx(_sf((d + 0.05) / se), rel=1e-9)
    assert res.p_upper == pytest.approx(_sf((0.05 - d) / se), rel=1e-9)
    assert res.pvalue == max(res.p_lower, res.p_upper)
    assert res.n == 400
    assert not res.equivalent  # δ̃ + 1.645 se = 0.0248 + 0.0569 > 0.05


def test_unequal_sizes_hand_computed() -> None:
    # 3/40 against 90/1000, margin 0.1, alpha 0.025 (a 95 % interval).
    res = tost_independent(_outcomes(3, 40), _outcomes(90, 1000), margin=0.1, alpha=0.025)
    p1, p2 = 4 / 42, 91 / 1002
    se = math.sqrt(p1 * (1 - p1) / 42 + p2 * (1 - p2) / 1002)
    z = 1.959963984540054
    assert (res.low, res.high) == pytest.approx((p1 - p2 - z * se, p1 - p2 + z * se), rel=1e-9)
    assert res.diff == pytest.approx(3 / 40 - 0.09)
    assert res.n == 1040


def test_no_events_in_either_sample_still_has_an_interval() -> None:
    # A careful agent duplicates nothing; the plain Wald interval would be the point 0.
    big = tost_independent([0] * 2000, [0] * 2000)
    assert big.diff == 0.0 and big.low < 0.0 < big.high
    assert big.equivalent and big.pvalue < 1e-6
    small = tost_independent([False] * 20, [False] * 20)
    assert not small.equivalent
    assert small.low < -0.05 and small.high > 0.05


def test_large_difference_is_not_equivalent() -> None:
    res = tost_independent(_outcomes(300, 1000), _outcomes(100, 1000))
    assert res.diff == pytest.approx(0.2)
    assert not res.equivalent and res.pvalue > 0.5 and res.low > 0.05


def test_pvalue_and_interval_are_dual() -> None:
    rng = random.Random(4)
    for _ in range(200):
        n1, n2 = rng.randint(1, 3000), rng.randint(1, 3000)
        p = rng.random() * 0.4
        x = [int(rng.random() < p) for _ in range(n1)]
        y = [int(rng.random() < p + rng.uniform(-0.05, 0.05)) for _ in range(n2)]
        margin = rng.choice([0.02, 0.05, 0.1])
        alpha = rng.choice([0.01, 0.05, 0.1])
        res = tost_independent(x, y, margin=margin, alpha=alpha)
        inside = -margin < res.low and res.high < margin
        assert res.equivalent == inside == (res.pvalue < alpha)


@pytest.mark.parametrize(
    ("x", "y", "kwargs", "message"),
    [
        ([], [0, 1], {}, "both samples need at least one outcome"),
        ([0, 1], [], {}, "both samples need at least one outcome"),
        ([0, 2], [0, 1], {}, "outcomes of x must be binary"),
        ([0, 1], [0, "yes"], {}, "outcomes of y must be binary"),
        ([0, 1], [0, 1], {"margin": 0.0}, "margin must be positive"),
        ([0, 1], [0, 1], {"alpha": 0.5}, r"alpha must lie in \(0, 0.5\)"),
    ],
)
def test_rejects_bad_input(
    x: list[object], y: list[object], kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        tost_independent(x, y, **kwargs)  # type: ignore[arg-type]
