"""H3 (paper §6.2): after a lost acknowledgement, does reading back protect less on an eventually
consistent read path than on a strongly consistent one?

The paper's test: "restricting to lost-acknowledgement faults in which the agent read back before
re-issuing, the duplicate rate was 13.4% on eventually consistent and 0.8% on strongly
consistent read paths (n = 947; GEE p = 0.005)". Selected on the fault spec's labels, not on mode
names: a lost acknowledgement is a fired timeout (group ``T``) behind which the request
committed (hidden outcome ``committed``); "read back before re-issuing" is the coder's
``verify_then_retry`` or ``verify_then_skip``; the read path is the focal write's contract class,
``non_idempotent_strong`` or ``non_idempotent_eventual`` (a write that takes a key or is
idempotent does not depend on its read path, and one with none has nothing to read). As for H1,
only unmitigated episodes under the native contract enter (E1). Rates use the duplicate ρ of the
summary; the test is the logistic GEE of H1 (clustered by template, Mancl–DeRouen errors, t on
G − 1 df) with the model as a fixed effect when it varies. A fit the data cannot support
(separation: no duplicate at all on one read path) is a one-line note and the rates stay.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from limbo_plugin.agents.registry import model_of
from limbo_plugin.report.facets import pooled, unmitigated, unpooled_note
from limbo_plugin.report.icc import DUPLICATE, book_of
from limbo_plugin.report.load import classify
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    icc_note,
    quiet_fit,
    rate,
)
from limbo_plugin.store.view import EpisodeView

ID = "h3_read_path"
TITLE = "H3: duplicates after a verified lost acknowledgement, eventual vs strong read path"
TERM = "eventual_read_path"
READ_PATHS = {"non_idempotent_eventual": "eventual", "non_idempotent_strong": "strong"}
VERIFIED = frozenset({"verify_then_retry", "verify_then_skip"})
ALL_AGENTS = "all agents"


def lost_ack(row: EpisodeView) -> bool:
    """A fired timeout behind which the request committed (the fault spec's labels)."""
    return row.fired and row.group == "T" and row.hidden_outcome == "committed"


def read_path(row: EpisodeView) -> str | None:
    """``eventual`` / ``strong`` for a non-idempotent, key-less focal write with a read-back."""
    label = classify(row.focal_idempotency, row.focal_verification, row.focal_accepts_key)
    return READ_PATHS.get(label or "")


def in_scope(row: EpisodeView) -> bool:
    return (lost_ack(row) and row.behaviour in VERIFIED and unmitigated(row)
            and row.contract == "native" and read_path(row) is not None)


def h3_rows(rows: Sequence[EpisodeView]) -> list[dict[str, Any]]:
    """The GEE's data: one mapping per episode in scope."""
    return [{"duplicate": int(r.duplicated), TERM: int(read_path(r) == "eventual"),
             "model": model_of(r.agent), "template": r.template}
            for r in rows if in_scope(r) and pooled(r)]


def formula_for(data: Sequence[dict[str, Any]]) -> str:
    terms = [TERM] + (["C(model)"] if len({d["model"] for d in data}) > 1 else [])
    return "duplicate ~ " + " + ".join(terms)


def gee_cells(data: Sequence[dict[str, Any]]) -> tuple[dict[str, Cell], str | None]:
    """The GEE's odds ratio, interval and p for the eventual read path, or why there is none
    (one line)."""
    templates = len({d["template"] for d in data})
    if len({d[TERM] for d in data}) < 2:
        return {}, "GEE not fitted: the episodes are all on one read path"
    if len({d["duplicate"] for d in data}) < 2:
        return {}, "GEE not fitted: every episode has the same duplicate outcome"
    if templates < 3:
        return {}, f"GEE not fitted: needs at least three templates to cluster by (found " \
                   f"{templates})"
    from limbo_plugin.stats import gee_logit

    formula = formula_for(data)
    try:
        with quiet_fit():
            fit = gee_logit(data, formula, cluster="template")
    except ValueError as exc:
        return {}, "GEE not fitted: " + " ".join(str(exc).split())
    return {"odds_ratio": fit.odds_ratio[TERM], "ci_low": fit.ci_low[TERM],
            "ci_high": fit.ci_high[TERM], "p": fit.pvalue[TERM],
            "clusters": fit.groups}, None


def table_h3(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if in_scope(r)]
    if not scope:
        return Skipped(ID, TITLE, "no fired lost-acknowledgement episode in which the agent read "
                       "back before re-issuing a key-less non-idempotent write (native "
                       "contract, vanilla condition, default documentation, instruction and "
                       "operator)")
    book = book_of(rows)
    agents = sorted({r.agent for r in scope})
    columns = [Column("agent", "agent"),
               Column("eventual", "eventual read path: duplicated", "rate"),
               Column("strong", "strong read path: duplicated", "rate"),
               Column("episodes", "episodes", "int"),
               Column("odds_ratio", "odds ratio (GEE)", "float", 2),
               Column("ci_low", "95% low", "float", 2), Column("ci_high", "95% high", "float", 2),
               Column("p", "p", "pvalue"), Column("clusters", "templates", "int")]
    data = h3_rows(rows)
    table = Table(ID, TITLE, "Fired lost-acknowledgement faults (a timeout behind which the "
                  "request committed) in which the agent read back before re-issuing, on "
                  "key-less non-idempotent focal writes (native contract, vanilla condition): "
                  "the duplicate rate by the focal write's read path, and the logistic GEE "
                  f"odds ratio of the eventual path over all agents; model: {formula_for(data)}"
                  ", clustered by template.", columns)
    for agent in [*agents, ALL_AGENTS] if len(agents) > 1 else agents:
        mine = ([r for r in scope if pooled(r)] if agent == ALL_AGENTS
                else [r for r in scope if r.agent == agent])
        cells: dict[str, Cell] = {
            "agent": agent, "episodes": len(mine),
            "eventual": rate([r for r in mine if read_path(r) == "eventual"], DUPLICATE, book),
            "strong": rate([r for r in mine if read_path(r) == "strong"], DUPLICATE, book)}
        if agent == (ALL_AGENTS if len(agents) > 1 else agents[0]):
            fitted, reason = gee_cells(data)
            cells.update(fitted)
            if reason:
                table.notes.append(reason + ".")
        table.rows.append(cells)
    table.notes.append(icc_note(book, DUPLICATE) + " The GEE interval is a 95% confidence "
                       "interval (Mancl–DeRouen errors, t on G − 1 df); it is fitted once, on "
                       f"the '{ALL_AGENTS if len(agents) > 1 else agents[0]}' row.")
    if (note := unpooled_note(scope)) is not None:
        table.notes.append(note + " The GEE leaves them out too.")
    return table
