"""Agreement between matched observations: observation equivalence and run-to-run stability.

Observation equivalence (paper §6.1): the worlds of a matched pair differ only in whether a
timed-out write committed, which the agent cannot observe. If the benchmark is sound, the agent's
first action after the timeout is distributed the same way in both worlds: its agreement across
the pair is no lower than across two runs of one world, and the distance between the two worlds'
first-action distributions is what exchangeable labels produce. Stability: two runs of the same
episodes should agree on their outcomes beyond chance (Cohen's κ).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PermutationResult",
    "cohens_kappa",
    "first_action_agreement",
    "permutation_tv_test",
]

# Permutations evaluated per block of the Monte Carlo null, to bound memory for many pairs.
_BLOCK = 2048


@dataclass(frozen=True)
class PermutationResult:
    """Within-pair permutation test of the total-variation distance between two labels.

    ``statistic`` is the observed distance, ``null_mean`` its mean under exchangeable labels and
    ``pvalue`` the share of the null at least as large as observed. ``permutations`` null
    statistics were evaluated: all ``2^d`` label swaps of the ``d`` pairs whose members differ
    when ``exact`` (swapping the others changes nothing), else that many random swaps.
    """

    statistic: float
    null_mean: float
    pvalue: float
    n_pairs: int
    permutations: int
    exact: bool = False


def _check_pairs(pairs: Sequence[tuple[Hashable, Hashable]]) -> None:
    if len(pairs) == 0:
        raise ValueError("no pairs: agreement needs at least one matched pair")
    for index, pair in enumerate(pairs):
        if len(pair) != 2:
            raise ValueError(f"pair {index} must have exactly two members, got {pair!r}")


def first_action_agreement(pairs: Sequence[tuple[Hashable, Hashable]]) -> float:
    """Share of pairs whose two members took the same first action (raw percent agreement).

    Applied to matched worlds and to repeat runs of one world, it gives the two agreement rates the
    paper compares (87 % vs 82 %); raw agreement is the right scale there because the question is
    whether matched worlds agree *less* than repeats, not agreement beyond chance.
    """
    _check_pairs(pairs)
    return sum(1 for a, b in pairs if a == b) / len(pairs)


def _signed_rows(pairs: Sequence[tuple[Hashable, Hashable]]) -> Any:
    """One row ``e_a − e_b`` per pair whose members differ, over the categories seen.

    The count difference between the A and B distributions is the sum of these rows; swapping the
    labels of a pair flips the sign of its row.
    """
    import numpy as np

    categories = {label: i for i, label in enumerate(dict.fromkeys(x for p in pairs for x in p))}
    discordant = [(a, b) for a, b in pairs if a != b]
    rows = np.zeros((len(discordant), len(categories)), dtype=np.int64)
    for i, (a, b) in enumerate(discordant):
        rows[i, categories[a]] += 1
        rows[i, categories[b]] -= 1
    return rows


def _l1_norms(signs: Any, rows: Any) -> Any:
    """Σ_k |Σ_i s_i (e_a − e_b)_k| for each sign vector: twice n times the TV distance."""
    import numpy as np

    return np.abs(signs @ rows).sum(axis=1)


def _all_signs(d: int) -> Iterator[Any]:
    """Every ±1 vector of length ``d``, in blocks (row j of all blocks = the bits of j)."""
    import numpy as np

    bits = np.arange(d, dtype=np.int64)
    for start in range(0, 2**d, _BLOCK):
        codes = np.arange(start, min(start + _BLOCK, 2**d), dtype=np.int64)[:, None] >> bits
        yield 1 - 2 * (codes & 1)


def _random_signs(d: int, count: int, seed: int) -> Iterator[Any]:
    """``count`` independent uniform ±1 vectors of length ``d``, in blocks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for start in range(0, count, _BLOCK):
        yield rng.choice(np.array([-1, 1], dtype=np.int64), size=(min(_BLOCK, count - start), d))


def permutation_tv_test(
    pairs: Sequence[tuple[Hashable, Hashable]],
    permutations: int = 10_000,
    seed: int = 0,
) -> PermutationResult:
    """Within-pair permutation test of the total-variation distance between two worlds' actions.

    ``pairs[i]`` = (first action in world A, first action in world B) of matched pair i. The
    statistic is TV = ½ Σ_k |P_A(k) − P_B(k)| between the two empirical distributions. Under
    the null of observation equivalence the labels A and B are exchangeable within each pair
    (a paired, or "within-block", permutation test: Good 2005, *Permutation, Parametric and
    Bootstrap Tests of Hypotheses*), so the null distribution is that of TV under
    independent swaps of each pair's labels. Pairs with equal members are unaffected by a swap, so
    with ``d`` discordant pairs the null is enumerated exactly when ``2^d ≤ permutations``
    (p = share of the ``2^d`` swaps with TV ≥ observed, the observed assignment included);
    otherwise ``permutations`` random swaps drawn with ``seed`` estimate it and
    p = (1 + #{TV* ≥ TV}) / (1 + permutations), which never reports an impossible p of 0
    (Phipson & Smyth 2010). Distances are compared as integer count differences, so ties are
    exact. ``null_mean`` is the mean of TV over the null, the distance that chance alone produces
    with this many pairs (TV is biased upwards in small samples, so 0 is not the reference).
    """
    import numpy as np

    _check_pairs(pairs)
    if isinstance(permutations, bool) or int(permutations) != permutations or permutations < 1:
        raise ValueError(f"permutations must be a positive integer, got {permutations!r}")
    n = len(pairs)
    rows = _signed_rows(pairs)
    d = rows.shape[0]
    observed = int(_l1_norms(np.ones((1, d), dtype=np.int64), rows)[0])
    exact = 2**d <= permutations
    blocks = _all_signs(d) if exact else _random_signs(d, int(permutations), seed)
    null = np.concatenate([_l1_norms(signs, rows) for signs in blocks])
    at_least = int(np.sum(null >= observed))
    # The exact null contains the observed assignment; a Monte Carlo null counts it in by hand.
    pvalue = at_least / len(null) if exact else (1 + at_least) / (1 + len(null))
    return PermutationResult(
        statistic=observed / (2 * n),
        null_mean=float(null.mean()) / (2 * n),
        pvalue=pvalue,
        n_pairs=n,
        permutations=len(null),
        exact=exact,
    )


def cohens_kappa(x: Sequence[Hashable], y: Sequence[Hashable]) -> float:
    """Cohen's (1960) κ between two runs of the same episodes: agreement beyond chance.

    κ = (p_o − p_e) / (1 − p_e), with p_o the observed share of episodes whose two runs agree and
    p_e the agreement expected if the runs were independent with their own marginal frequencies.
    κ rather than raw agreement, because with a rare outcome (duplicates in a few percent of
    episodes) two unrelated runs already agree almost always. Computed by statsmodels'
    ``inter_rater.cohens_kappa`` on the square contingency table of the categories seen.

    Undefined (``ValueError``) when every outcome of both runs is the same category (p_e = 1),
    for empty input, and for runs of different lengths.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y must rate the same episodes, got {len(x)} and {len(y)} ratings")
    if len(x) == 0:
        raise ValueError("no ratings: Cohen's kappa needs at least one episode rated twice")
    categories = {label: i for i, label in enumerate(dict.fromkeys([*x, *y]))}
    if len(categories) == 1:
        (only,) = categories
        raise ValueError(
            f"every rating in both runs is {only!r}: chance agreement is 1 and Cohen's kappa is "
            "undefined (0/0)"
        )
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_kappa

    table = np.zeros((len(categories), len(categories)))
    for a, b in zip(x, y, strict=True):
        table[categories[a], categories[b]] += 1
    return float(statsmodels_kappa(table, return_results=False))
