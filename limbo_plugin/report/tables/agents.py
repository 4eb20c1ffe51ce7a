"""Table 3: per agent and configuration, duplicate rate by fault family, TS, EOS and overclaim.

Duplicate rates are conditional on the fault having fired (the fault-free family counts every
episode); TS (not executed) is task success in the ``_pre`` worlds, where the request provably
never ran and the only right move is to do it; EOS and overclaim are over every fired faulted
episode. Configurations sit side by side: one row each, labelled by the configuration fields that
vary in the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from limbo_plugin.report.facets import (
    config_labeller,
    ordered_families,
    pooled,
    tiers_of,
    unpooled_note,
)
from limbo_plugin.report.icc import DUPLICATE, EOS, OVERCLAIM, TS, IccBook, book_of
from limbo_plugin.report.tables.base import (
    Cell,
    Column,
    Result,
    Skipped,
    Table,
    group,
    icc_note,
    rate,
)
from limbo_plugin.report.tables.conditions import condition_rank
from limbo_plugin.store.view import EpisodeView

ID = "table3_agents"
TITLE = "Table 3: results by agent"


def counted(row: EpisodeView) -> bool:
    return row.family == "none" or row.fired


def is_pre(row: EpisodeView) -> bool:
    return row.faulted and row.fault_mode.endswith("_pre")


def _cells(names: Sequence[str], config: tuple[str, ...], members: Sequence[EpisodeView],
           families: Sequence[str], book: IccBook) -> dict[str, Cell]:
    cells: dict[str, Cell] = dict(zip(names, config, strict=True))
    mine = [r for r in members if r.faulted]
    cells["faulted"] = len(mine)
    for family in families:
        cells[f"dup_{family}"] = rate([r for r in members if counted(r) and
                                       r.family == family], DUPLICATE, book)
    cells["ts_not_executed"] = rate([r for r in members if is_pre(r)], TS, book)
    cells["eos"] = rate(mine, EOS, book)
    cells["overclaim"] = rate(mine, OVERCLAIM, book)
    return cells


def _columns(names: Sequence[str], families: Sequence[str]) -> list[Column]:
    columns = [Column(n, n) for n in names] + [Column("faulted", "faulted episodes", "int")]
    columns += [Column(f"dup_{f}", f"dup {f}", "rate") for f in families]
    columns += [Column("ts_not_executed", "TS (not executed)", "rate"),
                Column("eos", "EOS", "rate"), Column("overclaim", "overclaim", "rate")]
    return columns


def _order(names: Sequence[str]) -> Callable[[tuple[tuple[str, ...], object]], tuple[object, ...]]:
    def order(item: tuple[tuple[str, ...], object]) -> tuple[object, ...]:
        """Configurations by their fields' values, conditions as Table 7 orders them (vanilla
        first, wait_<Δ> by Δ as a number)."""
        return tuple(condition_rank(v) if n == "condition" else v
                     for n, v in zip(names, item[0], strict=True))
    return order


def table3(rows: Sequence[EpisodeView]) -> Result:
    faulted = [r for r in rows if r.faulted]
    if not faulted:
        return Skipped(ID, TITLE, "no episode with a fired fault")
    names, label = config_labeller(rows)
    families = ordered_families([r for r in rows if counted(r)])
    book = book_of(rows)
    table = Table(ID, TITLE, "Duplicate rate by fault family (over fired episodes), task "
                  "success in the _pre worlds, exactly-once success and overclaim over fired "
                  "faulted episodes, one row per configuration.", _columns(names, families))
    for config, members in sorted(group(rows, label).items(), key=_order(names)):
        table.rows.append(_cells(names, config, members, families, book))
    table.notes.append(icc_note(book, DUPLICATE, TS, EOS, OVERCLAIM))
    return table


TIERS_ID = "table3_tiers"
TIERS_TITLE = "Table 3 by model tier (pooled)"


def table3_tiers(rows: Sequence[EpisodeView]) -> Result:
    """Table 3's columns pooled over each tier's models, as the paper's text reports them ("the
    six frontier models … 0.5%", "the two weaker models … 18%"): one row per tier and the
    configuration but the agent. The tier is the experiment spec's label of each model; a model
    it leaves out of pooled statistics (``pooled: false``) is in no row."""
    faulted = [r for r in rows if r.faulted]
    tiers = tiers_of(faulted)
    if not tiers:
        return Skipped(TIERS_ID, TIERS_TITLE, "no agent has a tier (the experiment spec's "
                       "`models:` labels frontier and weaker models; E1, E2, E4-E6 do)")
    names, label = config_labeller(rows)
    rest_names = ["tier", *names[1:]]  # the agent's column becomes the tier's
    families = ordered_families([r for r in rows if counted(r)])
    book = book_of(rows)
    columns = _columns(rest_names, families)
    columns.insert(len(rest_names), Column("models", "models", "int"))
    table = Table(TIERS_ID, TIERS_TITLE, "Table 3's rates with each tier's models pooled "
                  "(the experiment spec's labels): duplicate rate by fault family, TS in the "
                  "_pre worlds, EOS and overclaim.", columns)
    for tier in tiers:
        members = [r for r in rows if pooled(r) and r.tier == tier]
        by_rest = group(members, lambda r: label(r)[1:])
        for rest, mine in sorted(by_rest.items(),
                                 key=lambda kv: _order(names)((("", *kv[0]), None))):
            cells = _cells(rest_names, (tier, *rest), mine, families, book)
            cells["models"] = len({r.agent for r in mine})
            table.rows.append(cells)
    table.notes.append(icc_note(book, DUPLICATE, TS, EOS, OVERCLAIM))
    if (note := unpooled_note(rows)) is not None:
        table.notes.append(note)
    return table
