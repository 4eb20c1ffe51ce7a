"""Standard-normal distribution functions from the standard library.

Wilson intervals and TOST need only the normal quantile and tail areas. Importing scipy for them
costs about two seconds per run of the terminal summary, so they come from ``statistics.NormalDist``
(Wichura's AS 241 quantile, accurate to about 1e-16) and ``math.erfc``. The tails use ``erfc``
rather than ``NormalDist.cdf``, whose ``1 + erf(x)`` form rounds to 0 below about −8.3 standard
deviations; ``erfc`` keeps full relative precision far into the tail.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["normal_cdf", "normal_quantile", "normal_sf"]

_STANDARD = NormalDist()


def normal_quantile(probability: float) -> float:
    """Standard-normal quantile Φ⁻¹(p) for p in (0, 1)."""
    if not 0.0 < probability < 1.0:
        raise ValueError(f"probability must lie in (0, 1), got {probability!r}")
    return _STANDARD.inv_cdf(probability)


def normal_cdf(z: float) -> float:
    """Φ(z), accurate in the lower tail."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def normal_sf(z: float) -> float:
    """1 − Φ(z), accurate in the upper tail."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))
