"""Odds ratios and their interval bounds from a log-odds estimate, overflow-safe."""

from __future__ import annotations

import math

__all__ = ["exp_or_inf", "odds_ratio_bounds"]


def exp_or_inf(log_value: float) -> float:
    """``exp`` that returns infinity instead of raising when an odds-ratio bound overflows."""
    try:
        return math.exp(log_value)
    except OverflowError:
        return math.inf


def odds_ratio_bounds(log_odds: float, se: float, quantile: float) -> tuple[float, float, float]:
    """``exp(b)`` and ``exp(b ∓ q·se)``: the odds ratio and its interval on the log-odds scale.

    Intervals are built for the log-odds, where the sampling (or posterior) distribution is close
    to symmetric, and exponentiated; an interval built on the odds-ratio scale could cross 0.
    """
    return (
        exp_or_inf(log_odds),
        exp_or_inf(log_odds - quantile * se),
        exp_or_inf(log_odds + quantile * se),
    )
