"""Figures of the report (matplotlib, Agg backend), drawn from the tables so both always agree.

Each figure is written as PNG and SVG. A figure whose table was skipped is skipped with the same
reason. SVG ids are salted with a constant and no dates are written, so the same tables give the
same files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbo_plugin.report.tables.base import RateCell, Result, Skipped, Table


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    caption: str
    files: tuple[Path, ...]


FigureResult = Figure | Skipped


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "limbo", "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False, "figure.dpi": 110})
    return plt


def _save(fig: Any, directory: Path, name: str) -> tuple[Path, ...]:
    directory.mkdir(parents=True, exist_ok=True)
    png, svg = directory / f"{name}.png", directory / f"{name}.svg"
    fig.savefig(png, metadata={"Software": None}, bbox_inches="tight")
    fig.savefig(svg, metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    return png, svg


def _rate_columns(table: Table, prefix: str = "") -> list[str]:
    return [c.key for c in table.columns if c.kind == "rate" and c.key.startswith(prefix)]


def _label(table: Table, row: dict[str, Any], keys: Sequence[str]) -> str:
    return " · ".join(str(row.get(k)) for k in keys if row.get(k) not in (None, ""))


def _bars(ax: Any, groups: list[str], series: list[tuple[str, list[RateCell | None]]]) -> None:
    """Grouped bars in percent with 95% interval whiskers; an empty cell draws nothing."""
    width = 0.8 / max(1, len(series))
    for i, (name, cells) in enumerate(series):
        xs, ys, lows, highs = [], [], [], []
        for j, cell in enumerate(cells):
            if isinstance(cell, RateCell) and cell.rate is not None:
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(100 * cell.rate)
                lows.append(100 * (cell.rate - (cell.low or 0.0)))
                highs.append(100 * ((cell.high or 0.0) - cell.rate))
        ax.bar(xs, ys, width=width * 0.95, label=name, yerr=[lows, highs], capsize=2,
               error_kw={"elinewidth": 0.8})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("duplicate rate (%)")
    if len(series) > 1:
        ax.legend(fontsize=7, frameon=False, ncol=1 if len(series) < 6 else 2)


MAX_BAR_SERIES = 10
"""Beyond this many configurations grouped bars are unreadable: draw a heatmap instead."""
MAX_STACKED_ROWS = 40
MAX_HEATMAP_ROWS = 80
"""A heatmap taller than this is unreadable and slow to draw: the figure shows the first rows and
says so; the table has them all."""


def _capped(labels: list[str], rows: list[dict[str, Any]]) -> tuple[list[str],
                                                                    list[dict[str, Any]], str]:
    if len(labels) <= MAX_HEATMAP_ROWS:
        return labels, rows, ""
    return (labels[:MAX_HEATMAP_ROWS], rows[:MAX_HEATMAP_ROWS],
            f" (first {MAX_HEATMAP_ROWS} of {len(labels)} rows; all are in the table)")


def _heatmap(ax: Any, labels: list[str], columns: list[str],
             values: list[list[float | None]], legend: str) -> None:
    """Rows × columns of shares in percent; an empty cell stays blank (never a zero)."""
    import numpy as np

    data = np.array([[np.nan if v is None else 100 * v for v in row] for row in values])
    image = ax.imshow(np.ma.masked_invalid(data), aspect="auto", cmap="Reds", vmin=0, vmax=100,
                      interpolation="nearest")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(columns, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=7 if len(labels) > 20 else 8)
    if data.size <= 400:
        for (i, j), v in np.ndenumerate(data):
            if not np.isnan(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=6,
                        color="white" if v > 60 else "black")
    ax.figure.colorbar(image, ax=ax, label=legend, fraction=0.03, pad=0.02)


def _rate(cell: object) -> float | None:
    return cell.rate if isinstance(cell, RateCell) else None


def figure_families(table: Table, directory: Path) -> tuple[Path, ...]:
    plt = _pyplot()
    label_keys = [c.key for c in table.columns if c.kind == "text"]
    families = _rate_columns(table, "dup_")
    names = [f.removeprefix("dup_") for f in families]
    labels = [_label(table, row, label_keys) for row in table.rows]
    note = ""
    if len(table.rows) > MAX_BAR_SERIES:
        labels, rows, note = _capped(labels, table.rows)
        fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(families) + 4),
                                        0.22 * len(labels) + 1.8))
        _heatmap(ax, labels, names, [[_rate(row.get(f)) for f in families] for row in rows],
                 "duplicate rate (%)")
    else:
        series = [(label, [row.get(f) for f in families])
                  for label, row in zip(labels, table.rows, strict=True)]
        fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(families) + 2), 3.6))
        _bars(ax, names, series)  # type: ignore[arg-type]
    ax.set_title("Duplicate rate by agent and fault family (95% intervals)"
                 if len(table.rows) <= MAX_BAR_SERIES else
                 "Duplicate rate by configuration and fault family" + note)
    files = _save(fig, directory, "dup_by_family")
    plt.close(fig)
    return files


def figure_contracts(table: Table, directory: Path) -> tuple[Path, ...]:
    plt = _pyplot()
    columns = _rate_columns(table)
    rows = [r for r in table.rows if r.get("contract_class") != "all classes"]
    series = [(table.column(c).title, [r.get(c) for r in rows]) for c in columns]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 3.6))
    _bars(ax, [str(r["contract_class"]) for r in rows], series)  # type: ignore[arg-type]
    ax.set_title("Duplicate rate by contract class of the focal write (committed faults and "
                 "redelivery)")
    files = _save(fig, directory, "dup_by_contract")
    plt.close(fig)
    return files


def figure_waiting(table: Table, directory: Path) -> tuple[Path, ...]:
    """One panel per delay distribution; colour = condition, marker = contract variant."""
    plt = _pyplot()
    delays = [d for d in ("fixed", "tail") if any(r["delay"] == d for r in table.rows)]
    variants = [c.key for c in table.columns  # documentation, instruction, operator, if split
                if c.kind == "text" and c.key not in ("delay", "contract", "condition")]

    def condition_of(r: dict) -> str:
        return " / ".join(str(r[k]) for k in ("condition", *variants))

    conditions = list(dict.fromkeys(condition_of(r) for r in table.rows))
    contracts = list(dict.fromkeys(str(r["contract"]) for r in table.rows))
    colours = plt.get_cmap("tab10")
    markers = "osD^v<>"
    fig, axes = plt.subplots(1, len(delays), figsize=(5.2 * len(delays) + 1.8, 4.0),
                             sharey=True, squeeze=False)
    for ax, delay in zip(axes[0], delays, strict=True):
        for r in table.rows:
            rate = r["eos"]
            if r["delay"] != delay or not isinstance(rate, RateCell) or rate.rate is None:
                continue
            x = float(r["time_min"] or 0.0)  # type: ignore[arg-type]
            y = 100 * rate.rate
            err = [[y - 100 * (rate.low or 0.0)], [100 * (rate.high or 0.0) - y]]
            ax.errorbar([x], [y], yerr=err, capsize=2, linestyle="none",
                        marker=markers[contracts.index(str(r["contract"])) % len(markers)],
                        color=colours(conditions.index(condition_of(r)) % 10))
        ax.set_title(f"{delay} delay")
        ax.set_xlabel("mean simulated episode time (min)")
        ax.set_ylim(0, 105)
    axes[0][0].set_ylabel("exactly-once success (%)")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colours(i % 10), marker="o", linestyle="none", label=c)
               for i, c in enumerate(conditions)]
    if len(contracts) > 1:
        handles += [Line2D([], [], color="grey", marker=markers[i % len(markers)],
                           linestyle="none", label=c) for i, c in enumerate(contracts)]
    axes[0][-1].legend(handles=handles, fontsize=7, frameon=False, loc="upper left",
                       bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Waiting versus keys under late commits (95% intervals)")
    files = _save(fig, directory, "waiting_vs_keys")
    plt.close(fig)
    return files


def figure_behaviour(table: Table, directory: Path) -> tuple[Path, ...]:
    plt = _pyplot()
    classes = [c.key for c in table.columns if c.kind == "percent"]
    label_keys = [c.key for c in table.columns if c.kind == "text"]
    labels = [_label(table, r, label_keys) for r in table.rows]
    note = ""
    if len(labels) > MAX_STACKED_ROWS:
        labels, rows, note = _capped(labels, table.rows)
        fig, ax = plt.subplots(figsize=(8.0, 0.16 * len(labels) + 1.8))
        _heatmap(ax, labels, classes, [[float(r.get(c) or 0.0)
                                        for c in classes] for r in rows],
                 "share of episodes (%)")
    else:
        fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(labels) + 1.6))
        left = [0.0] * len(labels)
        colors = plt.get_cmap("tab10")
        for i, name in enumerate(classes):
            widths = [100 * float(r.get(name) or 0.0) for r in table.rows]  # type: ignore[arg-type]
            ax.barh(range(len(labels)), widths, left=left, label=name, color=colors(i % 10))
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of fired faulted episodes (%)")
        ax.legend(fontsize=7, frameon=False, bbox_to_anchor=(1.0, 1.0), loc="upper left")
    ax.set_title("Recovery behaviour after the focal fault" + note)
    files = _save(fig, directory, "behaviour")
    plt.close(fig)
    return files


FIGURES: list[tuple[str, str, str, str, Callable[[Table, Path], tuple[Path, ...]]]] = [
    ("dup_by_family", "table3_agents", "Duplicate rate by agent and fault family",
     "Bars: duplicate rate over fired episodes; whiskers: 95% Wilson-on-Kish intervals "
     "(Table 3).", figure_families),
    ("dup_by_contract", "contract_classes", "Duplicate rate by contract class",
     "Committed faults and redelivery in the vanilla condition, by the native contract class "
     "of the focal write and contract variant (Figure 3).", figure_contracts),
    ("waiting_vs_keys", "table6_waiting", "Waiting versus keys",
     "Exactly-once success against mean simulated episode time under late commits, one point "
     "per condition (Table 6).", figure_waiting),
    ("behaviour", "behaviour", "Recovery behaviour distribution",
     "What the agent did after the focal fault, by configuration and fault class.",
     figure_behaviour),
]


def build_figures(tables: Sequence[Result], directory: Path) -> list[FigureResult]:
    by_id = {t.id: t for t in tables}
    out: list[FigureResult] = []
    for figure_id, table_id, title, caption, draw in FIGURES:
        table = by_id.get(table_id)
        if not isinstance(table, Table):
            reason = table.reason if isinstance(table, Skipped) else f"no table {table_id}"
            out.append(Skipped(figure_id, f"Figure: {title}", reason))
            continue
        out.append(Figure(figure_id, title, caption, draw(table, directory)))
    return out
