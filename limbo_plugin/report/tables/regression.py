"""H1 (paper §6.2): odds of duplication for a non-idempotent write with an eventual or missing
read path, against keyable, idempotent and strongly verifiable writes.

Over fired committed-fault episodes, with fixed effects for the model and the fault mode (each only
when it varies), fitted twice: the Bayesian binomial mixed model with random intercepts for
template and template × instance (variational Bayes), and GEE clustered by template with
Mancl–DeRouen bias-reduced errors and a t reference on G − 1 degrees of freedom. The class is the
one the record states for the focal write under the episode's contract (a write that gains a key
under keys everywhere is keyable there). As in the paper (E1), only unmitigated episodes under the
native contract enter: a condition or a contract variant changes who duplicates, and H1 is about
the native contract as agents meet it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from limbo_plugin.agents.registry import model_of
from limbo_plugin.report.facets import committed_fault, pooled, unmitigated, unpooled_note
from limbo_plugin.report.load import classify
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table, quiet_fit
from limbo_plugin.store.view import EpisodeView

ID = "h1_regression"
TITLE = "H1: non-idempotent writes with an eventual or missing read path"
TERM = "weak_read_path"
RISKY = frozenset({"non_idempotent_eventual", "non_idempotent_unverifiable"})


def h1_rows(rows: Sequence[EpisodeView]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if not (committed_fault(r) and r.focal_idempotency and pooled(r)
                and unmitigated(r) and r.contract == "native"):
            continue
        label = classify(r.focal_idempotency, r.focal_verification, r.focal_accepts_key)
        out.append({"duplicate": int(r.duplicated), TERM: int(label in RISKY),
                    "model": model_of(r.agent), "fault": r.fault_mode,
                    "template": r.template,
                    "template_instance": f"{r.template}#{r.instance}"})
    return out


def formula_for(data: Sequence[dict[str, Any]]) -> str:
    terms = [TERM] + [f"C({f})" for f in ("model", "fault") if len({d[f] for d in data}) > 1]
    return "duplicate ~ " + " + ".join(terms)


REASONS = (
    ("separation", "among these episodes some level of a term (a model, a fault mode, the kind "
                   "of write) has only duplicates or only none, so its odds ratio is infinite "
                   "and cannot be estimated"),
    ("leverage 1", "some template is the only one at a level of a term (a model, a fault mode, "
                   "the kind of write), so errors clustered by template are undefined"),
    ("collinear", "two terms of the model cannot be told apart in these episodes (every "
                  "episode of one level of one is at one level of another)"),
    ("did not converge", "the fit did not converge on these episodes"),
    ("non-finite", "the fit gave no finite estimates on these episodes"),
    ("no variation", "every episode has the same duplicate outcome"),
)
"""What a fit's failure means, in words (a table never prints a library's raw message)."""


def why_no_fit(exc: ValueError) -> str:
    """The reason a fit failed, in words, from the checks of :mod:`limbo_plugin.stats`."""
    text = str(exc)
    for marker, reason in REASONS:
        if marker in text:
            return reason
    return ("the model could not be fitted to these episodes (too few episodes or templates "
            "at some level of a term)")


def table_h1(rows: Sequence[EpisodeView]) -> Result:
    data = h1_rows(rows)
    if not data:
        return Skipped(ID, TITLE, "no fired committed-fault episode under the native contract "
                       "in the vanilla condition with default documentation, instruction and "
                       "operator")
    if len({d[TERM] for d in data}) < 2:
        return Skipped(ID, TITLE, "the focal writes are all of one kind (need both writes with "
                       "an eventual or missing read path and others)")
    if len({d["duplicate"] for d in data}) < 2:
        return Skipped(ID, TITLE, "every episode has the same duplicate outcome")
    templates = len({d["template"] for d in data})
    if templates < 3:
        return Skipped(ID, TITLE, f"needs at least three templates to cluster by (found "
                       f"{templates})")
    try:
        from limbo_plugin.stats import bayes_mixed_logit, gee_logit
    except ImportError:
        return Skipped(ID, TITLE, "this installation's limbo_plugin.stats has no "
                       "bayes_mixed_logit / gee_logit")
    formula = formula_for(data)
    columns = [Column("method", "method"), Column("odds_ratio", "odds ratio", "float", 2),
               Column("ci_low", "95% low", "float", 2), Column("ci_high", "95% high", "float", 2),
               Column("p", "p", "pvalue"), Column("episodes", "episodes", "int"),
               Column("clusters", "templates", "int")]
    table = Table(ID, TITLE, f"Odds ratio of duplication for {TERM} (non-idempotent focal write "
                  "whose read path is eventually consistent or missing) over fired "
                  "committed-fault episodes (native contract, vanilla condition); model: "
                  f"{formula}.", columns)
    failures = []
    try:
        with quiet_fit():
            bayes = bayes_mixed_logit(data, formula, random={
                "template": "0 + C(template)", "instance": "0 + C(template_instance)"})
        table.rows.append({"method": "Bayesian mixed logit (VB)",
                           "odds_ratio": bayes.odds_ratio[TERM], "ci_low": bayes.ci_low[TERM],
                           "ci_high": bayes.ci_high[TERM], "p": None, "episodes": bayes.n,
                           "clusters": templates})
    except ValueError as exc:
        failures.append(f"Bayesian mixed logit: {why_no_fit(exc)}")
    try:
        with quiet_fit():
            gee = gee_logit(data, formula, cluster="template")
        table.rows.append({"method": "GEE (Mancl–DeRouen, t on G−1 df)",
                           "odds_ratio": gee.odds_ratio[TERM], "ci_low": gee.ci_low[TERM],
                           "ci_high": gee.ci_high[TERM], "p": gee.pvalue[TERM],
                           "episodes": gee.n, "clusters": gee.groups})
    except ValueError as exc:
        failures.append(f"GEE: {why_no_fit(exc)}")
    if not table.rows:
        return Skipped(ID, TITLE, "both fits failed: " + "; ".join(failures))
    table.notes += [f"The fit failed — {f}" for f in failures]
    table.notes.append("The Bayesian interval is a 95% credible interval; the GEE interval a "
                       "95% confidence interval.")
    if (note := unpooled_note([r for r in rows if committed_fault(r)])) is not None:
        table.notes.append(note.replace("Pooled rows leave", "The fits leave"))
    return table
