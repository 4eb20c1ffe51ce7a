"""Tables 8 and 9: production harnesses beside the minimal scaffold (paper §6.5, E3/E3k).

Rows are harness × model (``harness:<name>:<model>`` agents; ``litellm:`` and ``scripted:``
agents are the minimal scaffold, the reference). Table 8: natively (native contract), the
vanilla duplicate rate by fault family and EOS without and with the guard. Table 9: the duplicate
rate under committed faults and redelivery by contract variant and condition, and EOS with keys
everywhere and the guard.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbo_plugin.agents.registry import harness_of, model_of
from limbo_plugin.report.facets import committed_or_redelivery, ordered_families
from limbo_plugin.report.icc import DUPLICATE, EOS, book_of
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    group,
    icc_note,
    mean,
    rate,
)
from limbo_plugin.store.view import EpisodeView

ID8, TITLE8 = "table8_harnesses", "Table 8: production harnesses"
ID9, TITLE9 = "table9_harness_contracts", "Table 9: harnesses by contract variant and condition"
NO_HARNESS = "no harness:<name>:<model> agent in the records"


def _harness_key(row: EpisodeView) -> tuple[str, str]:
    harness = harness_of(row.agent)
    return (harness, model_of(row.agent))


def _order(keys: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted(keys, key=lambda k: (k[0] != "minimal", k[0], k[1]))


def has_harness(rows: Sequence[EpisodeView]) -> bool:
    return any(harness_of(r.agent) != "minimal" for r in rows)


def table8(rows: Sequence[EpisodeView]) -> Result:
    if not has_harness(rows):
        return Skipped(ID8, TITLE8, NO_HARNESS)
    native = [r for r in rows if r.contract == "native" and r.faulted]
    vanilla = [r for r in native if r.condition == "vanilla"]
    guard = [r for r in native if r.condition == "guard"]
    if not vanilla:
        return Skipped(ID8, TITLE8, "no fired faulted episode under the native contract and "
                       "the vanilla condition")
    book = book_of(rows)
    families = ordered_families(vanilla)
    columns = [Column("harness", "harness"), Column("model", "model")]
    columns += [Column(f"dup_{f}", f"dup {f}", "rate") for f in families]
    columns += [Column("dup_all", "dup (all faulted)", "rate"),
                Column("eos_native", "EOS native", "rate"),
                Column("eos_guard", "EOS guard", "rate"),
                Column("tokens", "tokens per episode", "float", digits=0)]
    table = Table(ID8, TITLE8, "Native contract: vanilla duplicate rate by fault family, and "
                  "exactly-once success over fired faulted episodes without and with the guard "
                  "(deployed in the MCP server for harnesses).", columns)
    by_key = group(native, _harness_key)
    for key in _order(list(by_key)):
        members = by_key[key]
        plain = [r for r in members if r.condition == "vanilla"]
        guarded = [r for r in members if r.condition == "guard"]
        cells: dict[str, Cell] = {"harness": key[0], "model": key[1]}
        for family in families:
            cells[f"dup_{family}"] = rate([r for r in plain if r.family == family], DUPLICATE,
                                          book)
        cells["dup_all"] = rate(plain, DUPLICATE, book)
        cells["eos_native"] = rate(plain, EOS, book)
        cells["eos_guard"] = rate(guarded, EOS, book) if guard else None
        spent = [float(r.tokens) for r in rows if r.contract == "native"
                 and r.condition == "vanilla" and _harness_key(r) == key
                 and r.tokens is not None]
        cells["tokens"] = mean(spent)
        table.rows.append(cells)
    if not guard:
        table.notes.append("No guard episodes: the EOS guard column is empty.")
    table.notes.append(icc_note(book, DUPLICATE, EOS) + " Tokens: mean prompt + completion "
                       "tokens per native vanilla episode (fault-free ones included), where the "
                       "agent recorded usage.")
    return table


def table9(rows: Sequence[EpisodeView]) -> Result:
    if not has_harness(rows):
        return Skipped(ID9, TITLE9, NO_HARNESS)
    scope = [r for r in rows if committed_or_redelivery(r)]
    variants = sorted({(r.contract, r.condition) for r in scope},
                      key=lambda v: (v[0] != "native", v[0], v[1] != "vanilla", v[1]))
    if len(variants) < 2:
        return Skipped(ID9, TITLE9, "needs harness episodes under at least two contract "
                       "variant / condition pairs (found "
                       f"{', '.join('/'.join(v) for v in variants) or 'none'})")
    book = book_of(rows)
    keys_guard = [r for r in rows if r.faulted and r.contract == "keys_everywhere"
                  and r.condition == "guard"]
    columns = [Column("harness", "harness"), Column("model", "model")]
    columns += [Column(f"{c}|{k}", f"{c} / {k}", "rate") for c, k in variants]
    columns.append(Column("eos_keys_guard", "EOS keys_everywhere / guard", "rate"))
    table = Table(ID9, TITLE9, "Duplicate rate under committed faults and redelivery (fired) "
                  "by contract variant / condition; the last column is exactly-once success "
                  "over fired faulted episodes with keys everywhere and the guard.", columns)
    by_key = group(scope, _harness_key)
    keyed = group(keys_guard, _harness_key)
    for key in _order(list(by_key)):
        members = by_key[key]
        cells: dict[str, Cell] = {"harness": key[0], "model": key[1]}
        for contract, condition in variants:
            cells[f"{contract}|{condition}"] = rate(
                [r for r in members if r.contract == contract and r.condition == condition],
                DUPLICATE, book)
        cells["eos_keys_guard"] = rate(keyed.get(key, []), EOS, book)
        table.rows.append(cells)
    table.notes.append(icc_note(book, DUPLICATE, EOS))
    return table
