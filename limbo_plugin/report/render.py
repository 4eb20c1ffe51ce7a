"""Write tables as Markdown, CSV and JSON. Same table in, byte-identical files out.

Numbers are formatted here and only here, for the human forms (Markdown, HTML): percentages with
one decimal, intervals in brackets, ``—`` for a cell without episodes (never a zero). The
machine-readable forms (CSV, JSON) carry every number at full precision — a p-value of 4.7e-38
is written as such, never rounded to 0.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from limbo_plugin.report.tables.base import Cell, Column, RateCell, Skipped, Table

DASH = "—"


def pct(value: float | None) -> str:
    return DASH if value is None else f"{100 * value:.1f}"


def format_cell(cell: Cell, column: Column) -> str:
    """The human form of a cell (Markdown and HTML)."""
    if cell is None:
        return DASH
    if isinstance(cell, RateCell):
        if cell.rate is None:
            return DASH
        return f"{pct(cell.rate)}% [{pct(cell.low)}–{pct(cell.high)}] ({cell.k}/{cell.n})"
    if isinstance(cell, float) and math.isnan(cell):
        return DASH
    if column.kind == "rate" and isinstance(cell, int | float):
        return f"{float(cell):.1f}"  # a cost row among rate rows (Table 7 in the paper's layout)
    if column.kind == "percent" and isinstance(cell, float):
        return f"{pct(cell)}%"  # an int in a share column is a count (Table 4's episodes)
    if column.kind == "pvalue" and isinstance(cell, int | float):
        return format_p(float(cell))
    if column.kind == "float" and isinstance(cell, int | float):
        return f"{float(cell):.{column.digits}f}"
    return str(cell)


def format_p(p: float) -> str:
    if p < 0.001:
        return f"{p:.1e}"
    return f"{p:.3f}"


def _number(value: float | None) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def json_cell(cell: Cell) -> Any:
    if isinstance(cell, RateCell):
        return {"k": cell.k, "n": cell.n, "rate": _number(cell.rate), "low": _number(cell.low),
                "high": _number(cell.high), "n_eff": _number(cell.n_eff)}
    if isinstance(cell, float):
        return _number(cell)
    return cell


def to_json(table: Table) -> dict[str, Any]:
    return {
        "id": table.id, "title": table.title, "description": table.description,
        "columns": [{"key": c.key, "title": c.title, "kind": c.kind} for c in table.columns],
        "rows": [{c.key: json_cell(row.get(c.key)) for c in table.columns} for row in table.rows],
        "notes": table.notes,
    }


def to_markdown(table: Table) -> str:
    head = [c.title for c in table.columns]
    lines = [f"## {table.title}", "", table.description, "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join("---" if c.kind == "text" else "--:" for c in table.columns) + "|"]
    for row in table.rows:
        cells = [format_cell(row.get(c.key), c).replace("|", "\\|") for c in table.columns]
        lines.append("| " + " | ".join(cells) + " |")
    if table.notes:
        lines.append("")
        lines += [f"{note}" for note in table.notes]
    return "\n".join(lines) + "\n"


def to_csv(table: Table) -> str:
    """One column per value: a rate becomes ``X``, ``X_k``, ``X_n``, ``X_low``, ``X_high``."""
    header: list[str] = []
    for c in table.columns:
        header += ([c.key, f"{c.key}_k", f"{c.key}_n", f"{c.key}_low", f"{c.key}_high"]
                   if c.kind == "rate" else [c.key])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in table.rows:
        out: list[Any] = []
        for c in table.columns:
            cell = row.get(c.key)
            if c.kind == "rate":
                if isinstance(cell, RateCell) and cell.rate is not None:
                    out += [_fmt(cell.rate), cell.k, cell.n, _fmt(cell.low), _fmt(cell.high)]
                elif isinstance(cell, RateCell):
                    out += ["", 0, 0, "", ""]
                elif isinstance(cell, int | float):
                    out += [_fmt(float(cell)), "", "", "", ""]
                else:
                    out += ["", "", "", "", ""]
            elif isinstance(cell, float):
                out.append(_fmt(cell))
            else:
                out.append("" if cell is None else cell)
        writer.writerow(out)
    return buffer.getvalue()


def _fmt(value: float | None) -> str:
    """The shortest text that reads back as the same float (``repr``): full precision."""
    number = _number(value)
    return "" if number is None else repr(number)


def write_table(table: Table, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"{table.id}.md", directory / f"{table.id}.csv",
             directory / f"{table.id}.json"]
    paths[0].write_text(to_markdown(table), encoding="utf-8")
    paths[1].write_text(to_csv(table), encoding="utf-8")
    paths[2].write_text(json.dumps(to_json(table), indent=2, sort_keys=True,
                                   ensure_ascii=False) + "\n", encoding="utf-8")
    return paths


def skipped_line(skipped: Skipped) -> str:
    return f"{skipped.title}: skipped — {skipped.reason}"
