"""Standard-normal quantile and tails from the standard library, against published table values."""

from __future__ import annotations

import math

import pytest

from limbo_plugin.stats._normal import normal_cdf, normal_quantile, normal_sf


@pytest.mark.parametrize(
    ("probability", "quantile"),
    # Normal percentage points, as tabulated in Abramowitz & Stegun (1964), ch. 26.
    [(0.975, 1.959963984540054), (0.95, 1.644853626951473), (0.995, 2.575829303548901)],
)
def test_quantile_matches_table(probability: float, quantile: float) -> None:
    assert normal_quantile(probability) == pytest.approx(quantile, rel=1e-14)
    assert normal_quantile(1 - probability) == pytest.approx(-quantile, rel=1e-14)


def _upper_tail_series(x: float, terms: int = 25) -> float:
    """Q(x) by the asymptotic series φ(x)/x · Σ_k (−1)^k (2k − 1)!! / x^(2k) (A&S 26.2.12).

    For x ≥ 8 the terms keep shrinking well past 25 of them, so the truncation error is far below
    double precision: an expected value that shares no code with erf or erfc.
    """
    total, term = 0.0, 1.0
    for k in range(terms):
        total += term
        term *= -(2 * k + 1) / (x * x)
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi) / x * total


@pytest.mark.parametrize("x", [8.0, 10.0, 20.0])
def test_tails_keep_relative_precision(x: float) -> None:
    expected = _upper_tail_series(x)
    assert normal_sf(x) == pytest.approx(expected, rel=1e-13)
    # A 1 + erf(x) formula (NormalDist.cdf) rounds these lower tails to exactly 0.
    assert normal_cdf(-x) == pytest.approx(expected, rel=1e-13)


def test_tail_values_near_the_centre() -> None:
    # Q(5) = 2.8665e-07, the one-sided "5 sigma" probability; Φ(1.959964) = 0.975.
    assert normal_sf(5.0) == pytest.approx(2.8665e-07, rel=1e-4)
    assert normal_cdf(0.0) == 0.5
    assert normal_cdf(1.959963984540054) == pytest.approx(0.975, rel=1e-15)


@pytest.mark.parametrize("probability", [0.0, 1.0, -0.1, 1.5])
def test_quantile_rejects_probabilities_outside_the_open_unit_interval(probability: float) -> None:
    with pytest.raises(ValueError, match="probability must lie in"):
        normal_quantile(probability)
