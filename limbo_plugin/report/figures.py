"""Figures of the report (matplotlib, Agg backend), drawn from the tables so both always agree.

Made for print: each figure is drawn at the paper's width (a full text width of 7 in; nothing is
scaled down afterwards), with 9 pt text or larger, and written as PNG at 300 dpi, SVG and PDF.
Every series is told apart by colour *and* marker or hatch (the Okabe–Ito palette, readable in
grey and by colour-blind readers), or labelled directly; legends sit outside the data; a
caption says what is drawn (bars or a heatmap). SVG ids are salted with a constant and no dates
are written, so the same tables give the same files. A figure whose table was skipped is skipped
with the same reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbo_plugin.report.facets import wait_bound
from limbo_plugin.report.tables.base import RateCell, Result, Skipped, Table

FULL_WIDTH = 7.0
"""The paper's text width in inches: figures are drawn at it, so 9 pt is 9 pt in print."""
FONT_PT = 9
DPI = 300
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
             "#000000")
"""Eight colours distinguishable with the common colour-vision deficiencies."""
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "<", ">", "h")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    caption: str
    files: tuple[Path, ...]


FigureResult = Figure | Skipped


@dataclass(frozen=True)
class Drawn:
    files: tuple[Path, ...]
    caption: str


def style(i: int) -> dict[str, str]:
    """The ``i``-th series' colour, marker and hatch: colours cycle every eight series, and the
    hatch (bars) changes with each cycle, so no two of the first 64 series look alike."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)], "marker": MARKERS[i % len(MARKERS)],
            "hatch": HATCHES[(i // len(OKABE_ITO)) % len(HATCHES)]}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "svg.hashsalt": "limbo", "font.size": FONT_PT, "axes.titlesize": FONT_PT + 1,
        "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT, "ytick.labelsize": FONT_PT,
        "legend.fontsize": FONT_PT, "figure.titlesize": FONT_PT + 1,
        "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 100,
        "savefig.dpi": DPI, "hatch.linewidth": 0.6, "pdf.fonttype": 42, "svg.fonttype": "path",
    })
    return plt


def warm_up() -> None:
    """Import what drawing and writing a figure will: pyplot, the PDF and SVG backends, the
    PNG writer and the font subsetter of the PDF's embedded fonts (a figure worker does this
    while the tables it draws from are made)."""
    from importlib import import_module

    _pyplot()
    for module in ("matplotlib.backends.backend_pdf", "matplotlib.backends.backend_svg",
                   "fontTools.subset", "PIL.PngImagePlugin"):
        import_module(module)


def _save(fig: Any, directory: Path, name: str) -> tuple[Path, ...]:
    directory.mkdir(parents=True, exist_ok=True)
    png, svg, pdf = (directory / f"{name}.{ext}" for ext in ("png", "svg", "pdf"))
    box = _tight_box(fig)
    fig.savefig(png, dpi=DPI, metadata={"Software": None}, bbox_inches=box)
    fig.savefig(svg, metadata={"Date": None, "Creator": None}, bbox_inches=box)
    fig.savefig(pdf, metadata={"CreationDate": None, "Creator": None, "Producer": None},
                bbox_inches=box)
    return png, svg, pdf


def _tight_box(fig: Any) -> Any:
    """The figure's tight bounding box, padded, as ``savefig(bbox_inches="tight")`` finds it
    for the PNG (laid out without rendering, text measured by Agg at :data:`DPI`), found once
    for the three files: ``"tight"`` lays the figure out once more per file, a fifth of the
    time spent drawing. The PNG is the same; the SVG and the PDF measured their text with
    their own metrics, whose box lies inside this one, a few hundredths of an inch smaller
    (Agg's hinted text at 300 dpi is a little wider): they keep at least their 0.1 in of
    margin, nothing is cut, and their page is at most 0.05 in larger (a test holds this)."""
    import matplotlib

    screen_dpi = fig.dpi
    fig.dpi = DPI
    try:
        fig.draw_without_rendering()
        box = fig.get_tightbbox(fig.canvas.get_renderer())
    finally:
        fig.dpi = screen_dpi
    return box.padded(matplotlib.rcParams["savefig.pad_inches"])


def _rate_columns(table: Table, prefix: str = "") -> list[str]:
    return [c.key for c in table.columns if c.kind == "rate" and c.key.startswith(prefix)]


def _label(table: Table, row: dict[str, Any], keys: Sequence[str]) -> str:
    return " · ".join(str(row.get(k)) for k in keys if row.get(k) not in (None, ""))


def _legend_right(ax: Any, **kw: Any) -> None:
    """A legend beside the axes, never over the data."""
    ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              **kw)


def _bars(ax: Any, groups: list[str], series: list[tuple[str, list[RateCell | None]]],
          ylabel: str = "duplicate rate (%)", *, look: dict[str, str] | None = None,
          width: float | None = None) -> None:
    """Grouped bars in percent with 95% interval whiskers; an empty cell draws nothing. Each
    series has its own colour and, past eight series, its own hatch (or ``look``, for a series
    drawn on its own)."""
    single = look
    width = width or 0.8 / max(1, len(series))
    for i, (name, cells) in enumerate(series):
        look = single or style(i)
        xs, ys, lows, highs = [], [], [], []
        for j, cell in enumerate(cells):
            if isinstance(cell, RateCell) and cell.rate is not None:
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(100 * cell.rate)
                lows.append(100 * (cell.rate - (cell.low or 0.0)))
                highs.append(100 * ((cell.high or 0.0) - cell.rate))
        ax.bar(xs, ys, width=width * 0.95, label=name, color=look["color"],
               hatch=look["hatch"], edgecolor="white" if not look["hatch"] else "black",
               linewidth=0.4, yerr=[lows, highs], capsize=1.5,
               error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=25, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel(ylabel)
    if len(series) > 1:
        _legend_right(ax, ncol=1 if len(series) <= 12 else 2)


def _no_waiting(table: Table) -> Skipped | None:
    """Figure 4 plots the wait_<Δ> policies against the others (E5): without one there is a
    dot per panel and nothing to compare."""
    if any(wait_bound(str(r["condition"])) is not None for r in table.rows):
        return None
    return Skipped("waiting_vs_keys", "Figure: Waiting versus keys",
                   "no wait_<Δ> condition among the late-commit episodes: the figure compares "
                   "waiting policies with keys (E5; run --experiment e5)")


MAX_BAR_SERIES = 10
"""Beyond this many configurations grouped bars are unreadable: draw a heatmap instead."""
MAX_STACKED_ROWS = 40
MAX_HEATMAP_ROWS = 80
"""A heatmap taller than this is unreadable and slow to draw: the figure shows the first rows and
says so; the table has them all."""
ROW_INCHES = 0.2
"""Height of one heatmap or stacked-bar row: a 9 pt label needs about 0.17 in."""


def _capped(labels: list[str], rows: list[dict[str, Any]]) -> tuple[list[str],
                                                                    list[dict[str, Any]], str]:
    if len(labels) <= MAX_HEATMAP_ROWS:
        return labels, rows, ""
    return (labels[:MAX_HEATMAP_ROWS], rows[:MAX_HEATMAP_ROWS],
            f" (first {MAX_HEATMAP_ROWS} of {len(labels)} rows; all are in the table)")


def _heatmap(ax: Any, labels: list[str], columns: list[str],
             values: list[list[float | None]], legend: str) -> None:
    """Rows × columns of shares in percent, each cell printed; an empty cell stays blank (never
    a zero)."""
    import numpy as np

    data = np.array([[np.nan if v is None else 100 * v for v in row] for row in values])
    image = ax.imshow(np.ma.masked_invalid(data), aspect="auto", cmap="Reds", vmin=0, vmax=100,
                      interpolation="nearest")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(columns, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if data.size <= 800:
        for (i, j), v in np.ndenumerate(data):
            if not np.isnan(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=FONT_PT,
                        color="white" if v > 60 else "black")
    ax.figure.colorbar(image, ax=ax, label=legend, fraction=0.04, pad=0.02)


def _rate(cell: object) -> float | None:
    return cell.rate if isinstance(cell, RateCell) else None


def figure_families(table: Table, directory: Path) -> Drawn:
    plt = _pyplot()
    label_keys = [c.key for c in table.columns if c.kind == "text"]
    families = _rate_columns(table, "dup_")
    names = [f.removeprefix("dup_") for f in families]
    labels = [_label(table, row, label_keys) for row in table.rows]
    if len(table.rows) > MAX_BAR_SERIES:
        labels, rows, note = _capped(labels, table.rows)
        fig, ax = plt.subplots(figsize=(FULL_WIDTH, ROW_INCHES * len(labels) + 1.6))
        _heatmap(ax, labels, names, [[_rate(row.get(f)) for f in families] for row in rows],
                 "duplicate rate (%)")
        ax.set_title("Duplicate rate by configuration and fault family" + note)
        caption = ("Heatmap: duplicate rate (%) over fired episodes, one row per configuration "
                   "and one column per fault family; each cell prints its rate, a blank cell "
                   "has no episodes. Intervals are in Table 3." + note)
    else:
        series = [(label, [row.get(f) for f in families])
                  for label, row in zip(labels, table.rows, strict=True)]
        fig, ax = plt.subplots(figsize=(FULL_WIDTH, 3.2))
        _bars(ax, names, series)  # type: ignore[arg-type]
        ax.set_title("Duplicate rate by configuration and fault family (95% intervals)")
        caption = ("Bars: duplicate rate over fired episodes, one colour per configuration; "
                   "whiskers: 95% Wilson-on-Kish intervals (Table 3).")
    files = _save(fig, directory, "dup_by_family")
    plt.close(fig)
    return Drawn(files, caption)


def figure_contracts(table: Table, directory: Path) -> Drawn:
    """One group of bars per contract class. Several contract variants: one colour each, named
    in the legend. One variant: one colour per class, named in the legend too, so the figure
    reads without its caption."""
    plt = _pyplot()
    columns = _rate_columns(table)
    rows = [r for r in table.rows if r.get("contract_class") != "all classes"]
    classes = [str(r["contract_class"]).replace("_", " ") for r in rows]
    fig, ax = plt.subplots(figsize=(FULL_WIDTH * 0.75, 3.0))
    if len(columns) == 1:
        (column,) = columns
        for j, (name, row) in enumerate(zip(classes, rows, strict=True)):
            cells: list[RateCell | None] = [None] * len(rows)
            value = row.get(column)
            cells[j] = value if isinstance(value, RateCell) else None
            _bars(ax, classes, [(name, cells)], look=style(j), width=0.8)
        _legend_right(ax, title=f"contract class ({table.column(column).title} contract)")
        what = "one colour per contract class (legend)"
    else:
        series = [(table.column(c).title, [r.get(c) for r in rows]) for c in columns]
        _bars(ax, classes, series)  # type: ignore[arg-type]
        what = "one colour per contract variant (legend)"
    ax.set_title("Duplicate rate by contract class of the focal write")
    files = _save(fig, directory, "dup_by_contract")
    plt.close(fig)
    return Drawn(files, "Bars: duplicate rate under committed faults and redelivery in the "
                 f"vanilla condition, by the native contract class of the focal write, {what}; "
                 "whiskers: 95% intervals (Figure 3's table).")


def figure_waiting(table: Table, directory: Path) -> Drawn | Skipped:
    """One panel per delay distribution. The wait_<Δ> policies of a contract are one line,
    each point labelled with its Δ; every other condition is its own colour and marker."""
    if (skipped := _no_waiting(table)) is not None:
        return skipped
    plt = _pyplot()
    from matplotlib.lines import Line2D

    delays = [d for d in ("fixed", "tail") if any(r["delay"] == d for r in table.rows)]
    variants = [c.key for c in table.columns  # documentation, instruction, operator, if split
                if c.kind == "text" and c.key not in ("delay", "contract", "condition")]

    def series_of(r: dict[str, Any]) -> str:
        """A point's series: ``wait`` policies together, other conditions on their own, per
        contract and variant."""
        name = "wait_Δ" if wait_bound(str(r["condition"])) is not None else str(r["condition"])
        parts = [name, *(str(r[k]) for k in variants)]
        if str(r["contract"]) != "native":
            parts.append(str(r["contract"]))
        return " / ".join(parts)

    names = list(dict.fromkeys(series_of(r) for r in table.rows))
    fig, axes = plt.subplots(1, len(delays), figsize=(FULL_WIDTH, 3.4), sharey=True,
                             squeeze=False, layout="constrained")
    for ax, delay in zip(axes[0], delays, strict=True):
        for i, name in enumerate(names):
            look = style(i)
            points = []
            for r in table.rows:
                rate = r["eos"]
                if (r["delay"] != delay or series_of(r) != name or not isinstance(rate, RateCell)
                        or rate.rate is None):
                    continue
                points.append((float(r["time_min"] or 0.0), rate,  # type: ignore[arg-type]
                               wait_bound(str(r["condition"]))))
            if not points:
                continue
            points.sort(key=lambda p: (p[2] is None, p[2] or 0, p[0]))
            xs = [x for x, _, _ in points]
            ys = [100 * (rate.rate or 0.0) for _, rate, _ in points]
            err = [[y - 100 * (rate.low or 0.0) for y, (_, rate, _) in zip(ys, points,
                                                                           strict=True)],
                   [100 * (rate.high or 0.0) - y for y, (_, rate, _) in zip(ys, points,
                                                                           strict=True)]]
            is_wait = any(bound is not None for _, _, bound in points)
            ax.errorbar(xs, ys, yerr=err, capsize=2, color=look["color"],
                        marker=look["marker"], markersize=5,
                        linestyle="-" if is_wait and len(points) > 1 else "none",
                        linewidth=1.0, elinewidth=0.7)
            for k, (x, y, (_, _, bound)) in enumerate(zip(xs, ys, points, strict=True)):
                if bound is not None:  # alternate below and above: neighbours never overlap
                    ax.annotate(f"Δ={bound}", (x, y), textcoords="offset points",
                                xytext=(5, -12 if k % 2 == 0 else 5), fontsize=FONT_PT,
                                color=look["color"])
        ax.set_title(f"{delay} delay")
        ax.set_xlabel("mean simulated episode time (min)")
        ax.set_ylim(0, 108)
        ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    axes[0][0].set_ylabel("exactly-once success (%)")
    handles = [Line2D([], [], color=style(i)["color"], marker=style(i)["marker"],
                      linestyle="-" if name.startswith("wait_Δ") else "none", label=name)
               for i, name in enumerate(names)]
    fig.legend(handles=handles, frameon=False, loc="outside lower center",
               ncol=min(4, len(handles)))
    fig.suptitle("Waiting versus keys under late commits (95% intervals)")
    files = _save(fig, directory, "waiting_vs_keys")
    plt.close(fig)
    return Drawn(files, "Exactly-once success against mean simulated episode time under late "
                 "commits, one panel per delay distribution; the wait_<Δ> policies form one "
                 "line per contract, each point labelled with its assumed bound Δ (s); every "
                 "other condition has its own colour and marker; whiskers: 95% intervals "
                 "(Table 6).")


def figure_behaviour(table: Table, directory: Path) -> Drawn:
    plt = _pyplot()
    classes = [c.key for c in table.columns if c.kind == "percent"]
    label_keys = [c.key for c in table.columns if c.kind == "text"]
    labels = [_label(table, r, label_keys) for r in table.rows]
    note = ""
    if len(labels) > MAX_STACKED_ROWS:
        labels, rows, note = _capped(labels, table.rows)
        fig, ax = plt.subplots(figsize=(FULL_WIDTH, ROW_INCHES * len(labels) + 1.8))
        _heatmap(ax, labels, classes, [[float(r.get(c) or 0.0)
                                        for c in classes] for r in rows],
                 "share of episodes (%)")
        caption = ("Heatmap: share (%) of fired faulted episodes in each recovery-behaviour "
                   "class, one row per configuration and fault class." + note)
    else:
        fig, ax = plt.subplots(figsize=(FULL_WIDTH, max(1.8, 0.26 * len(labels) + 1.0)))
        left = [0.0] * len(labels)
        for i, name in enumerate(classes):
            look = style(i)
            widths = [100 * float(r.get(name) or 0.0) for r in table.rows]  # type: ignore[arg-type]
            ax.barh(range(len(labels)), widths, left=left, label=name, color=look["color"],
                    hatch=look["hatch"] or HATCHES[i % len(HATCHES)], edgecolor="white",
                    linewidth=0.4)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of fired faulted episodes (%)")
        _legend_right(ax)
        caption = ("Stacked bars: share of fired faulted episodes in each recovery-behaviour "
                   "class (colour and hatch), one bar per configuration and fault class.")
    ax.set_title("Recovery behaviour after the focal fault" + note)
    files = _save(fig, directory, "behaviour")
    plt.close(fig)
    return Drawn(files, caption)


FIGURES: list[tuple[str, str, str, Callable[[Table, Path], Drawn | Skipped]]] = [
    ("dup_by_family", "table3_agents", "Duplicate rate by agent and fault family",
     figure_families),
    ("dup_by_contract", "contract_classes", "Duplicate rate by contract class",
     figure_contracts),
    ("waiting_vs_keys", "table6_waiting", "Waiting versus keys", figure_waiting),
    ("behaviour", "behaviour", "Recovery behaviour distribution", figure_behaviour),
]


def build_figures(tables: Sequence[Result], directory: Path) -> list[FigureResult]:
    by_id = {t.id: t for t in tables}
    out: list[FigureResult] = []
    for figure_id, table_id, title, draw in FIGURES:
        table = by_id.get(table_id)
        if not isinstance(table, Table):
            reason = table.reason if isinstance(table, Skipped) else f"no table {table_id}"
            out.append(Skipped(figure_id, f"Figure: {title}", reason))
            continue
        drawn = draw(table, directory)
        if isinstance(drawn, Skipped):
            out.append(drawn)
            continue
        out.append(Figure(figure_id, title, drawn.caption, drawn.files))
    return out
