"""Table 4: Shapley decomposition of McFadden's pseudo-R² of duplication over four factors.

Factors (paper §6.2): *model* (the model behind the agent), *contract* (the focal write's contract
class and the contract variant), *fault* (the fault mode) and *harness* (``harness:<name>:…`` →
name; ``litellm:`` and ``scripted:`` → minimal). Columns: pooled over committed faults and
redelivery (the preregistered analysis), and split into faults an immediate read-back resolves
and faults it cannot. A factor with a single level in a column cannot explain anything there; it
is left out of that fit and the cell says so instead of showing a zero.

As in the paper (E1, and E3 in its native condition) only unmitigated episodes under the native
contract enter: the vanilla condition with default documentation, instruction and operator, one
block per experiment (Table 4's top is E1, its bottom E3; E3k's keys-everywhere episodes are not
E3's). Conditions are not a factor of
the decomposition, and pooling them would credit their effects to whichever factor they
correlate with.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from limbo_plugin.agents.registry import harness_of, model_of
from limbo_plugin.report.facets import (
    committed_or_redelivery,
    contract_factor,
    pooled,
    unmitigated,
    unpooled_note,
)
from limbo_plugin.report.tables.base import Column, Result, Skipped, Table, group, quiet_fit
from limbo_plugin.store.view import EpisodeView

ID = "table4_shapley"
TITLE = "Table 4: Shapley decomposition of the explained variance in duplicates"
FACTORS: dict[str, Callable[[EpisodeView], str]] = {
    "model": lambda r: model_of(r.agent),
    "contract": contract_factor,
    "fault": lambda r: r.fault_mode,
    "harness": lambda r: harness_of(r.agent),
}
SCOPES: dict[str, Callable[[EpisodeView], bool]] = {
    "pooled": committed_or_redelivery,
    "resolvable": lambda r: r.fired and r.fault_class == "resolvable",
    "unresolvable": lambda r: r.fired and r.fault_class == "unresolvable",
}
ONE_LEVEL = "one level"


def factor_rows(rows: Sequence[EpisodeView]) -> list[dict[str, Any]]:
    return [{"duplicate": int(r.duplicated), **{f: fn(r) for f, fn in FACTORS.items()}}
            for r in rows]


def native_unmitigated(row: EpisodeView) -> bool:
    """The paper's Table 4 episodes: the native contract (E1; E3 "native condition"), vanilla
    condition, default documentation, instruction and operator. A keys-everywhere run (E3k) is
    another contract, not another level of the contract factor."""
    return row.contract == "native" and unmitigated(row)


def experiment_name(row: EpisodeView) -> str:
    return row.experiment or "—"


def table4(rows: Sequence[EpisodeView]) -> Result:
    try:
        from limbo_plugin.stats import shapley_pseudo_r2
    except ImportError:
        return Skipped(ID, TITLE, "this installation's limbo_plugin.stats has no "
                       "shapley_pseudo_r2")
    eligible = [r for r in rows if native_unmitigated(r) and pooled(r)
                and any(k(r) for k in SCOPES.values())]
    if not eligible:
        return Skipped(ID, TITLE, "no fired committed-fault or redelivery episode under the "
                       "native contract in the vanilla condition with default documentation, "
                       "instruction and operator")
    blocks = sorted(group(eligible, experiment_name).items())
    columns = [Column("experiment", "experiment")] if len(blocks) > 1 else []
    columns.append(Column("factor", "factor"))
    columns += [Column(name, name, "percent") for name in SCOPES]
    table = Table(ID, TITLE, "Shapley shares of McFadden's pseudo-R² of a logistic model of "
                  "duplication (any duplicate in the episode), pooled over committed faults and "
                  "redelivery and split into resolvable and unresolvable faults; native "
                  "contract, vanilla condition, default documentation, instruction and "
                  "operator; one block per experiment (the paper: E1 top, E3 bottom).", columns)
    fitted = False
    for experiment, members in blocks:
        label = {"experiment": experiment} if len(blocks) > 1 else {}
        prefix = f"{experiment}: " if len(blocks) > 1 else ""
        block, ok = _decompose(members, shapley_pseudo_r2, prefix, table.notes)
        fitted = fitted or ok
        table.rows += [{**label, **row} for row in block]
    if not fitted:
        return Skipped(ID, TITLE, "no column could be fitted: " + " ".join(table.notes))
    table.notes.append("Shares of the pseudo-R² (they sum to 100% over the fitted factors); the "
                       "pseudo-R² row is McFadden's R² of the model with every varying factor. "
                       f"'{ONE_LEVEL}': the factor is constant in that column and contributes "
                       "nothing.")
    if (note := unpooled_note([r for r in rows if native_unmitigated(r)])) is not None:
        table.notes.append(note.replace("Pooled rows leave", "The fits leave"))
    return table


def _decompose(rows: Sequence[EpisodeView], fit: Callable[..., Any], prefix: str,
               notes: list[str]) -> tuple[list[dict[str, Any]], bool]:
    """One experiment's block: a row per factor, the pseudo-R² and the episode counts."""
    scoped = {name: [r for r in rows if keep(r)] for name, keep in SCOPES.items()}
    cells: dict[str, dict[str, Any]] = {f: {"factor": f} for f in FACTORS}
    summary: dict[str, Any] = {"factor": "pseudo-R²"}
    count: dict[str, Any] = {"factor": "episodes"}
    fitted = False
    for name, members in scoped.items():
        count[name] = len(members)
        data = factor_rows(members)
        varying = [f for f in FACTORS if len({d[f] for d in data}) > 1]
        for factor in FACTORS:
            if factor not in varying:
                cells[factor][name] = ONE_LEVEL if data else None
        if not data:
            notes.append(f"{prefix}{name}: no episodes.")
            continue
        if len({d["duplicate"] for d in data}) < 2:
            notes.append(f"{prefix}{name}: every episode has the same duplicate outcome; "
                         "nothing to explain.")
            continue
        if not varying:
            notes.append(f"{prefix}{name}: no factor takes more than one value.")
            continue
        try:
            with quiet_fit():
                result = fit(data, "duplicate", varying)
        except ValueError as exc:
            notes.append(f"{prefix}{name}: the fit failed ({exc}).")
            continue
        fitted = True
        summary[name] = result.r2
        for factor in varying:
            cells[factor][name] = result.shares.get(factor) if result.shares else None
    block = [*cells.values(), summary, count]
    for row in block[:-1]:
        for name in SCOPES:
            row.setdefault(name, None)
    return block, fitted
