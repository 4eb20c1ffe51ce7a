"""Re-issues after a late commit: when the agent re-sent the write (§6.1) and with which key
(§6.3).

A re-issue is the agent's first later call of the focal tool with the faulted call's intent
fields (SPEC §5), read from its own calls (:attr:`~limbo_plugin.report.load.EpisodeView.reissue_key`
and ``reissue_after_s``). Late commits are selected on the fault spec's label (hidden outcome
``late``), fired.

* **Timing** (§6.1): episodes that re-issued within a minute of the timeout, after waiting at
  least a minute, or never — the duplicate rate of each.
* **Keys** (§6.3): re-issues under a contract whose focal write accepts a key, by whether the
  re-issue reused the first attempt's key, the first attempt carried none, or the agent sent a
  new key — the duplicate rate of each.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.report.icc import DUPLICATE, book_of
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table, icc_note, rate
from limbo_plugin.store.view import EpisodeView

ID_TIMING, TITLE_TIMING = "reissue_timing", "§6.1: when late commits were re-issued"
ID_KEYS, TITLE_KEYS = "key_reuse", "§6.3: keys on late-commit re-issues"
MINUTE = 60.0
TIMING = ("within a minute", "after a minute or more", "never re-issued")
KEYS = {"reused": "reused the original key", "no_key": "first attempt had no key",
        "new_key": "new key on the retry"}


def late(row: EpisodeView) -> bool:
    return row.fired and row.hidden_outcome == "late"


def timing(row: EpisodeView) -> str:
    if row.reissue_after_s is None:
        return TIMING[2]
    return TIMING[0] if row.reissue_after_s < MINUTE else TIMING[1]


def table_reissue_timing(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if late(r) and r.focal_keyed is not None]
    if not scope:
        return Skipped(ID_TIMING, TITLE_TIMING, "no fired late-commit episode whose faulted "
                       "call is in the agent's trace")
    book = book_of(rows)
    columns = [Column("contract", "contract"), Column("reissue", "re-issue"),
               Column("episodes", "episodes", "int"),
               Column("duplicate_rate", "duplicate rate", "rate")]
    table = Table(ID_TIMING, TITLE_TIMING, "Late-commit episodes by when the agent re-issued "
                  "the write after the timeout's answer (simulated time), with the duplicate "
                  "rate of each; configurations pooled.", columns)
    for contract in sorted({r.contract for r in scope}, key=lambda c: (c != "native", c)):
        mine = [r for r in scope if r.contract == contract]
        for label in TIMING:
            members = [r for r in mine if timing(r) == label]
            if members:
                table.rows.append({"contract": contract, "reissue": label,
                                   "episodes": len(members),
                                   "duplicate_rate": rate(members, DUPLICATE, book)})
    table.notes.append(icc_note(book, DUPLICATE))
    return table


def table_key_reuse(rows: Sequence[EpisodeView]) -> Result:
    scope = [r for r in rows if late(r) and r.reissue_key is not None and r.focal_accepts_key]
    if not scope:
        return Skipped(ID_KEYS, TITLE_KEYS, "no re-issue of a late-committing write that "
                       "accepts an idempotency key")
    book = book_of(rows)
    columns = [Column("contract", "contract"), Column("key", "re-issue"),
               Column("reissues", "re-issues", "int"),
               Column("duplicate_rate", "duplicate rate", "rate")]
    table = Table(ID_KEYS, TITLE_KEYS, "Re-issues of a late-committing write that accepts an "
                  "idempotency key, by the key the agent sent: the first attempt's (the "
                  "in-flight original and the retry share it), none on the first attempt, or a "
                  "new one; configurations pooled.", columns)
    for contract in sorted({r.contract for r in scope}, key=lambda c: (c != "native", c)):
        mine = [r for r in scope if r.contract == contract]
        for key, label in KEYS.items():
            members = [r for r in mine if r.reissue_key == key]
            if members:
                table.rows.append({"contract": contract, "key": label,
                                   "reissues": len(members),
                                   "duplicate_rate": rate(members, DUPLICATE, book)})
    table.notes.append(icc_note(book, DUPLICATE))
    return table
