"""Statistics of the benchmark (SPEC §7, paper §5 "Statistics"), one small function per method.

Why Wilson on a Kish effective sample size. Episodes that share a task template are correlated,
so a cell's intervals must account for clustering by template. The obvious tool, a cluster
bootstrap, resamples whole templates, but there are only twelve: with so few clusters the bootstrap
distribution is coarse and its intervals are too narrow (anti-conservative), and in a cell with no
events every resample has no events, so the interval degenerates to the single point 0. Instead the
cell's ``n`` is deflated by the design effect ``1 + (m̄ − 1) ρ`` (Kish), with ``m̄`` the mean
episodes per template and ρ the intra-class correlation by template (one-way ANOVA estimator,
truncated at 0), and the Wilson score interval, which behaves well at 0 % and 100 %, is taken on
that effective size. ρ is best estimated once per experiment and passed in, since sparse cells do
not identify it.

The rest, by module:

* :mod:`.paired` — paired comparisons (the same worlds under two conditions): exact McNemar with
  Holm–Bonferroni correction within each family, and TOST with a ±5 pp margin (H4).
* :mod:`.independent` — TOST for two independent proportions (H4 compares different episodes).
* :mod:`.shapley` — Shapley decomposition of McFadden's pseudo-R² over factors (Table 4).
* :mod:`.gee` — logistic GEE clustered by template, Mancl–DeRouen covariance, t on G − 1 df.
* :mod:`.mixed` — Bayesian binomial mixed model with random intercepts, by variational Bayes.
* :mod:`.agreement` — observation equivalence (first-action agreement, within-pair permutation
  test of the total-variation distance) and run-to-run stability (Cohen's κ).

Importing this package imports neither scipy nor statsmodels (nor numpy or pandas): the plugin
imports its reporters on every run, so heavy libraries are imported inside the functions that
need them, and normal quantiles come from the standard library.
"""

from typing import TYPE_CHECKING

from limbo_plugin._lazy import lazy_exports

_EXPORTS = {
    "GeeResult": "limbo_plugin.stats.gee",
    "MixedResult": "limbo_plugin.stats.mixed",
    "PermutationResult": "limbo_plugin.stats.agreement",
    "RateEstimate": "limbo_plugin.stats.intervals",
    "ShapleyResult": "limbo_plugin.stats.shapley",
    "TostResult": "limbo_plugin.stats.paired",
    "bayes_mixed_logit": "limbo_plugin.stats.mixed",
    "cohens_kappa": "limbo_plugin.stats.agreement",
    "first_action_agreement": "limbo_plugin.stats.agreement",
    "gee_logit": "limbo_plugin.stats.gee",
    "holm": "limbo_plugin.stats.paired",
    "icc_binary": "limbo_plugin.stats.intervals",
    "icc_within_cells": "limbo_plugin.stats.intervals",
    "kish_effective_n": "limbo_plugin.stats.intervals",
    "mcnemar_exact": "limbo_plugin.stats.paired",
    "paired_counts": "limbo_plugin.stats.paired",
    "permutation_tv_test": "limbo_plugin.stats.agreement",
    "rate_with_interval": "limbo_plugin.stats.intervals",
    "shapley_pseudo_r2": "limbo_plugin.stats.shapley",
    "tost_independent": "limbo_plugin.stats.independent",
    "tost_paired_difference": "limbo_plugin.stats.paired",
    "wilson_interval": "limbo_plugin.stats.intervals",
}
"""Where each name lives: a name is imported on first use, with its own module only, so the
summary's intervals do not import the report's regression models with them."""

__all__ = [
    "GeeResult",
    "MixedResult",
    "PermutationResult",
    "RateEstimate",
    "ShapleyResult",
    "TostResult",
    "bayes_mixed_logit",
    "cohens_kappa",
    "first_action_agreement",
    "gee_logit",
    "holm",
    "icc_binary",
    "icc_within_cells",
    "kish_effective_n",
    "mcnemar_exact",
    "paired_counts",
    "permutation_tv_test",
    "rate_with_interval",
    "shapley_pseudo_r2",
    "tost_independent",
    "tost_paired_difference",
    "wilson_interval",
]

if TYPE_CHECKING:
    from limbo_plugin.stats.agreement import (
        PermutationResult,
        cohens_kappa,
        first_action_agreement,
        permutation_tv_test,
    )
    from limbo_plugin.stats.gee import GeeResult, gee_logit
    from limbo_plugin.stats.independent import tost_independent
    from limbo_plugin.stats.intervals import (
        RateEstimate,
        icc_binary,
        icc_within_cells,
        kish_effective_n,
        rate_with_interval,
        wilson_interval,
    )
    from limbo_plugin.stats.mixed import MixedResult, bayes_mixed_logit
    from limbo_plugin.stats.paired import (
        TostResult,
        holm,
        mcnemar_exact,
        paired_counts,
        tost_paired_difference,
    )
    from limbo_plugin.stats.shapley import ShapleyResult, shapley_pseudo_r2


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
