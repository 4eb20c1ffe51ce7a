"""First-action agreement, the within-pair permutation test of TV distance, and Cohen's κ.

Expected values are enumerated by hand (small permutation nulls), re-derived by a brute-force
enumeration written independently here (itertools and Counter, no numpy), or taken from published
worked examples (Cohen's κ).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from fractions import Fraction

import pytest

from limbo_plugin.stats import (
    PermutationResult,
    cohens_kappa,
    first_action_agreement,
    permutation_tv_test,
)

Pair = tuple[Hashable, Hashable]


def _tv(pairs: Sequence[Pair]) -> Fraction:
    a = Counter(x for x, _ in pairs)
    b = Counter(y for _, y in pairs)
    return Fraction(sum(abs(a[k] - b[k]) for k in a.keys() | b.keys()), 2 * len(pairs))


def _brute_force_null(pairs: Sequence[Pair]) -> list[Fraction]:
    """TV under every one of the 2^n within-pair label swaps."""
    return [
        _tv([(y, x) if swap else (x, y) for (x, y), swap in zip(pairs, swaps, strict=True)])
        for swaps in itertools.product((False, True), repeat=len(pairs))
    ]


# --- first-action agreement ---------------------------------------------------------------------


def test_agreement_is_the_share_of_equal_pairs() -> None:
    pairs = [("read", "read"), ("read", "retry"), ("escalate", "escalate"), ("retry", "retry")]
    assert first_action_agreement(pairs) == 0.75
    assert first_action_agreement([("a", "b")]) == 0.0
    assert first_action_agreement([(None, None)]) == 1.0


def test_agreement_rejects_empty_and_malformed_pairs() -> None:
    with pytest.raises(ValueError, match="no pairs"):
        first_action_agreement([])
    with pytest.raises(ValueError, match="pair 1 must have exactly two members"):
        first_action_agreement([("a", "a"), ("a", "b", "c")])  # type: ignore[list-item]


# --- permutation test, hand-enumerated nulls ----------------------------------------------------


def test_four_identical_discordant_pairs() -> None:
    # Every pair is (read, write): TV = 1. A swap vector s gives TV = |Σ s| / 4; over the 16
    # vectors Σ s = ±4 twice (TV 1), ±2 eight times (TV 1/2), 0 six times (TV 0).
    # p = 2/16 = 1/8; null mean = (2·1 + 8·1/2) / 16 = 3/8.
    res = permutation_tv_test([("read", "write")] * 4)
    assert isinstance(res, PermutationResult)
    assert res.statistic == 1.0
    assert res.pvalue == pytest.approx(1 / 8)
    assert res.null_mean == pytest.approx(3 / 8)
    assert (res.n_pairs, res.permutations, res.exact) == (4, 16, True)


def test_three_categories_with_a_concordant_pair() -> None:
    # A = (a, a, b, a), B = (b, c, c, a): counts differ by a +2, c −2, so TV = 4/8 = 1/2.
    # The three discordant pairs give rows a−b, a−c, b−c; of the 8 sign vectors, (+,−,+) and
    # (−,+,−) cancel to 0 and the other six give L1 = 4, i.e. TV 1/2.
    # p = 6/8 = 3/4; null mean = 6 · (1/2) / 8 = 3/8. The concordant pair adds nothing.
    pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "a")]
    res = permutation_tv_test(pairs)
    assert res.statistic == 0.5
    assert res.pvalue == pytest.approx(3 / 4)
    assert res.null_mean == pytest.approx(3 / 8)
    assert res.permutations == 8 and res.exact


def test_three_pairs_against_the_brute_force_null() -> None:
    pairs: list[Pair] = [("read", "write"), ("read", "read"), ("write", "escalate")]
    null = _brute_force_null(pairs)  # 8 swap vectors, all pairs included
    observed = _tv(pairs)
    assert observed == Fraction(1, 3)
    res = permutation_tv_test(pairs)
    assert res.statistic == pytest.approx(float(observed))
    assert res.pvalue == pytest.approx(sum(t >= observed for t in null) / len(null))
    assert res.null_mean == pytest.approx(float(sum(null) / len(null)))


def test_only_concordant_pairs() -> None:
    res = permutation_tv_test([("read", "read"), ("retry", "retry"), ("read", "read")])
    assert (res.statistic, res.null_mean, res.pvalue) == (0.0, 0.0, 1.0)


def test_exact_null_matches_brute_force_on_random_pairs() -> None:
    rng = random.Random(12)
    actions = ["read", "retry", "escalate", "stop"]
    pairs: list[Pair] = [(rng.choice(actions), rng.choice(actions)) for _ in range(13)]
    null = _brute_force_null(pairs)
    observed = _tv(pairs)
    res = permutation_tv_test(pairs, permutations=2**13)
    assert res.exact
    assert res.statistic == pytest.approx(float(observed))
    assert res.pvalue == pytest.approx(sum(t >= observed for t in null) / len(null))
    assert res.null_mean == pytest.approx(float(sum(null) / len(null)))


def test_monte_carlo_agrees_with_the_exact_null() -> None:
    # 14 discordant pairs (members always differ), so 2^14 swaps matter.
    rng = random.Random(3)
    drawn = (rng.sample("abcc", 2) for _ in range(40))
    discordant: list[Pair] = [(a, b) for a, b in drawn if a != b]
    pairs = discordant[:14]
    assert len(pairs) == 14
    exact = permutation_tv_test(pairs, permutations=2**14)
    assert exact.exact
    mc = permutation_tv_test(pairs, permutations=4000, seed=1)
    assert not mc.exact and mc.permutations == 4000
    se = math.sqrt(exact.pvalue * (1 - exact.pvalue) / 4000)
    assert abs(mc.pvalue - exact.pvalue) < 4 * se + 1 / 4001
    assert mc.null_mean == pytest.approx(exact.null_mean, rel=0.05)
    assert mc.statistic == exact.statistic


def test_monte_carlo_pvalue_is_never_zero_and_is_seeded() -> None:
    pairs: list[Pair] = [("read", "write")] * 40  # observed TV = 1, null P(TV = 1) = 2^-39
    res = permutation_tv_test(pairs, permutations=999, seed=5)
    assert res.pvalue == pytest.approx(1 / 1000)
    rng = random.Random(8)
    mixed: list[Pair] = [(rng.choice("ab"), rng.choice("abb")) for _ in range(60)]
    once = permutation_tv_test(mixed, permutations=500, seed=2)
    assert permutation_tv_test(mixed, permutations=500, seed=2) == once
    assert permutation_tv_test(mixed, permutations=500, seed=3).null_mean != once.null_mean


def test_monte_carlo_handles_many_pairs_in_blocks() -> None:
    rng = random.Random(4)
    pairs: list[Pair] = [(rng.choice("abcd"), rng.choice("abcd")) for _ in range(5000)]
    res = permutation_tv_test(pairs, permutations=5000, seed=0)
    assert res.permutations == 5000
    assert 0.0 < res.null_mean < 0.1  # exchangeable by construction: small TV
    assert res.pvalue > 0.001


@pytest.mark.parametrize("permutations", [0, -5, 2.5, True])
def test_permutations_must_be_a_positive_integer(permutations: int) -> None:
    with pytest.raises(ValueError, match="permutations must be a positive integer"):
        permutation_tv_test([("a", "b")], permutations=permutations)


def test_permutation_test_rejects_no_pairs() -> None:
    with pytest.raises(ValueError, match="no pairs"):
        permutation_tv_test([])


# --- Cohen's kappa ------------------------------------------------------------------------------


def _ratings(table: dict[tuple[str, str], int]) -> tuple[list[str], list[str]]:
    x: list[str] = []
    y: list[str] = []
    for (a, b), count in table.items():
        x += [a] * count
        y += [b] * count
    return x, y


@pytest.mark.parametrize(
    ("yes_yes", "yes_no", "no_yes", "no_no", "kappa"),
    [
        # Worked examples of the Wikipedia article "Cohen's kappa": 50 grant proposals
        # (p_o = 0.7, p_e = 0.5, κ = 0.4), and the two tables with equal agreement but different
        # marginals (κ = 0.1304 and 0.2593).
        (20, 5, 10, 15, 0.4),
        (45, 15, 25, 15, 0.1304),
        (25, 35, 5, 35, 0.2593),
    ],
)
def test_kappa_published_two_by_two_examples(
    yes_yes: int, yes_no: int, no_yes: int, no_no: int, kappa: float
) -> None:
    x, y = _ratings(
        {("yes", "yes"): yes_yes, ("yes", "no"): yes_no, ("no", "yes"): no_yes, ("no", "no"): no_no}
    )
    assert cohens_kappa(x, y) == pytest.approx(kappa, abs=5e-5)


def test_kappa_three_categories_by_hand() -> None:
    # Rows (run 1) × columns (run 2) = [[10, 2, 0], [3, 8, 1], [0, 2, 4]], n = 30.
    # p_o = 22/30; marginals 12, 12, 6 and 13, 12, 5; p_e = (156 + 144 + 30)/900 = 330/900;
    # κ = (660 − 330) / (900 − 330) = 11/19.
    cells = [[10, 2, 0], [3, 8, 1], [0, 2, 4]]
    labels = ["dup", "clean", "unknown"]
    x, y = _ratings({(labels[i], labels[j]): cells[i][j] for i in range(3) for j in range(3)})
    assert cohens_kappa(x, y) == pytest.approx(11 / 19, rel=1e-12)


def test_kappa_extremes() -> None:
    assert cohens_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == pytest.approx(1.0)
    assert cohens_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    # Run 1 all "a", run 2 all "b": p_o = 0 = p_e, κ = 0.
    assert cohens_kappa(["a"] * 5, ["b"] * 5) == pytest.approx(0.0)


def test_kappa_undefined_and_bad_input() -> None:
    with pytest.raises(ValueError, match=r"every rating in both runs is 0.*undefined"):
        cohens_kappa([0] * 10, [0] * 10)
    with pytest.raises(ValueError, match="no ratings"):
        cohens_kappa([], [])
    with pytest.raises(ValueError, match="same episodes, got 2 and 3"):
        cohens_kappa([0, 1], [0, 1, 1])
