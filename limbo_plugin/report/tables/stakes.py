"""H4 (paper §6.4): are agents more careful with irreversible writes?

After an ambiguous fault (a timeout, a 500 or a partial batch whose outcome the response does not
tell), the share of episodes in which the agent re-issued the focal write unchecked — with
neither a read-back nor an idempotency key: a ``blind_retry`` — for irreversible focal writes
against reversible ones. A re-issue with a key (``retry_same_key``, ``retry_new_key``) is
reported in its own columns and is not "unchecked": a same-key retry is the protocol a keyed
write asks for, and counting it made a difference between agents that key and agents that do
not look like a difference in care (docs/decisions.md, D-stakes-keyed). As the paper defines
them, both are writes a repeat duplicates: *irreversible* is an email or a comment (a
non-idempotent write with no compensation), not a refund, which is naturally idempotent and
cannot be repeated into a duplicate; idempotent writes are in neither group. Different writes,
so different episodes: the equivalence test is the TOST for two independent proportions with a
±5 pp margin (its 90% interval is the one TOST inverts), and the difference itself is tested
with Fisher's exact test (two-sided).
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.facets import ambiguous, pooled, unpooled_note
from limbo_plugin.report.icc import Measure, book_of
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

ID = "h4_stakes"
TITLE = "H4: re-issuing irreversible versus reversible writes without checking"
MARGIN = 0.05
ALL_AGENTS = "all agents"


IDEMPOTENT = frozenset({"idempotent", "naturally_idempotent"})
UNCHECKED_BEHAVIOURS = frozenset({"blind_retry"})
KEYED_BEHAVIOURS = frozenset({"retry_same_key", "retry_new_key"})


def in_scope(row: EpisodeView) -> bool:
    return (ambiguous(row) and row.behaviour is not None
            and row.focal_irreversible is not None
            and row.focal_idempotency is not None and row.focal_idempotency not in IDEMPOTENT)


def unchecked(row: EpisodeView) -> bool:
    return row.behaviour in UNCHECKED_BEHAVIOURS


def keyed(row: EpisodeView) -> bool:
    return row.behaviour in KEYED_BEHAVIOURS


UNCHECKED = Measure("re-issued unchecked", unchecked, in_scope)
KEYED = Measure("re-issued with a key", keyed, in_scope)


def difference_p(hard: Sequence[EpisodeView], soft: Sequence[EpisodeView]) -> float:
    """Fisher's exact test (two-sided) of the two shares."""
    from scipy.stats import fisher_exact

    a, b = sum(map(unchecked, hard)), sum(map(unchecked, soft))
    return float(fisher_exact([[a, len(hard) - a], [b, len(soft) - b]]).pvalue)


def table_stakes(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if in_scope(r)]
    if not {r.focal_irreversible for r in scope} >= {True, False}:
        return Skipped(ID, TITLE, "needs coded episodes after an ambiguous fault on both "
                       "irreversible and reversible focal writes")
    from limbo_plugin.stats import tost_independent

    book = book_of(rows)
    agents = sorted({r.agent for r in scope})
    columns = [Column("agent", "agent"),
               Column("irreversible", "irreversible: re-issued unchecked", "rate"),
               Column("reversible", "reversible: re-issued unchecked", "rate"),
               Column("irreversible_keyed", "irreversible: re-issued with a key", "rate"),
               Column("reversible_keyed", "reversible: re-issued with a key", "rate"),
               Column("difference", "difference (pp)", "float"),
               Column("low", "90% low (pp)", "float"), Column("high", "90% high (pp)", "float"),
               Column("p_difference", "difference p (Fisher)", "pvalue"),
               Column("p", "TOST p", "pvalue"), Column("equivalent", "within ±5 pp")]
    table = Table(ID, TITLE, "After an ambiguous fault, the share of episodes in which the "
                  "agent re-issued the focal write unchecked (neither a read-back nor an "
                  "idempotency key: a blind retry), irreversible (email, comment) against "
                  "reversible non-idempotent focal writes; keyed re-issues in their own "
                  "columns; Fisher's exact test of the difference in unchecked re-issues; TOST "
                  "for independent proportions, ±5 pp.", columns)
    for agent in [*agents, ALL_AGENTS] if len(agents) > 1 else agents:
        mine = ([r for r in scope if pooled(r)] if agent == ALL_AGENTS
                else [r for r in scope if r.agent == agent])
        hard = [r for r in mine if r.focal_irreversible]
        soft = [r for r in mine if not r.focal_irreversible]
        cells: dict[str, Cell] = {
            "agent": agent, "irreversible": rate(hard, UNCHECKED, book),
            "reversible": rate(soft, UNCHECKED, book),
            "irreversible_keyed": rate(hard, KEYED, book),
            "reversible_keyed": rate(soft, KEYED, book)}
        if hard and soft:
            with quiet_fit():
                test = tost_independent([unchecked(r) for r in hard],
                                        [unchecked(r) for r in soft], margin=MARGIN)
            cells.update(difference=100 * test.diff, low=100 * test.low, high=100 * test.high,
                         p=test.pvalue, equivalent="yes" if test.equivalent else "no",
                         p_difference=difference_p(hard, soft))
        table.rows.append(cells)
    table.notes.append(icc_note(book, UNCHECKED, KEYED) + " 'no' means equivalence within ±5 pp "
                       "could not be established, not that the shares differ.")
    if len(agents) > 1 and (note := unpooled_note(scope)) is not None:
        table.notes.append(note)
    return table
