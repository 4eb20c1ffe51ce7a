"""The HTML report: every table and figure, and the episode explorer, as static files.

``index.html`` opens from the file system with nothing installed: no server, no CDN, no build
step. Browsers refuse ``fetch`` on ``file://`` URLs but do load classic ``<script src>`` files, so
the explorer's data ships as small JavaScript files:

* ``data/index.js`` — one compact row per episode (categorical values interned), enough to filter
  and list 100k episodes without loading a single trace;
* ``data/episodes-NNNN.js`` — the full records (trace and ledger) in chunks of
  :data:`CHUNK_SIZE`, copied byte for byte from the record files and loaded only when an episode
  in the chunk is opened.

The page itself is rendered from a Jinja2 template; the explorer's script and stylesheet are
copied beside it.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from limbo_plugin.records import make_test_id
from limbo_plugin.report.facets import outcome_of
from limbo_plugin.report.figures import Figure, FigureResult
from limbo_plugin.report.load import LoadedRecords, read_raw_lines
from limbo_plugin.report.render import format_cell
from limbo_plugin.report.tables.base import RateCell, Result, Skipped, Table
from limbo_plugin.store.view import EpisodeView

if TYPE_CHECKING:
    from markupsafe import Markup

CHUNK_SIZE = 200
HEADLINE = ("table3_agents", "dup_by_family")
"""What the page opens with: the duplicate rate by agent and fault family with its intervals
(Table 3) and its figure (Figure 2); every other result follows."""
REFERENCE = ("table1_tools", "table2_fault_modes", "table11_descriptions")
"""The tables that describe the benchmark rather than these records (the paper's Tables 1, 2
and 11, from the specs): last on the page, collapsed, with the skipped list."""
PT_TO_PX = 4 / 3
"""CSS pixels per point: a figure shown at its natural size prints its 9 pt text at 12 px,
the same in every card."""
TEMPLATES = Path(__file__).parent / "templates"
ASSETS = ("dom.js", "explorer.js", "report.css")
INDEX_FIELDS = ("uid", "test_id", "episode_id", "agent", "contract", "docs", "instruction",
                "condition", "operator", "template", "instance", "focal_write", "fault_mode",
                "family", "outcome", "duplicates", "behaviour", "final_status", "sim_seconds",
                "tool_calls", "chunk")
INTERNED = frozenset({"agent", "contract", "docs", "instruction", "condition", "operator",
                      "template", "focal_write", "fault_mode", "family", "outcome",
                      "behaviour", "final_status"})


def episode_uid(row: EpisodeView) -> str:
    """A short, stable id for URLs (``index.html#episode=<uid>``): key, configuration and
    repeat (the explorer also takes the test id pytest prints)."""
    repeat = f"|{row.repeat}" if row.repeat else ""
    digest = hashlib.sha1(f"{row.episode_id}|{row.fingerprint()}{repeat}".encode()).hexdigest()
    return digest[:12]


def index_payload(rows: Sequence[EpisodeView]) -> dict[str, Any]:
    """Columns, interned values and one list per episode; the explorer expands it lazily."""
    values: dict[str, list[Any]] = {name: [] for name in INDEX_FIELDS if name in INTERNED}
    lookup: dict[str, dict[Any, int]] = {name: {} for name in values}
    table = []
    for position, row in enumerate(rows):
        record = {
            "uid": episode_uid(row), "outcome": outcome_of(row),
            "test_id": make_test_id(row.episode_id, row, row.repeat),
            "chunk": position // CHUNK_SIZE, "sim_seconds": round(row.sim_seconds, 1),
        }
        entry = []
        for name in INDEX_FIELDS:
            value = record[name] if name in record else getattr(row, name)
            if name in lookup:
                index = lookup[name].get(value)
                if index is None:
                    index = lookup[name][value] = len(values[name])
                    values[name].append(value)
                value = index
            entry.append(value)
        table.append(entry)
    ranks = {row.family: row.family_rank for row in rows}
    return {"fields": list(INDEX_FIELDS), "values": values, "rows": table,
            "chunkSize": CHUNK_SIZE,
            "familyOrder": sorted(ranks, key=lambda family: (ranks[family], family))}


def write_data(rows: Sequence[EpisodeView], loaded: LoadedRecords, directory: Path) -> int:
    """Write ``index.js`` and the record chunks; returns the number of chunk files."""
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("episodes-*.js"):
        old.unlink()
    payload = json.dumps(index_payload(rows), separators=(",", ":"), ensure_ascii=False)
    (directory / "index.js").write_text(f"window.LIMBO_INDEX = {payload};\n", encoding="utf-8")
    chunks = 0
    for start in range(0, len(rows), CHUNK_SIZE):
        part = rows[start:start + CHUNK_SIZE]
        lines = read_raw_lines(loaded.sources, part)
        number = start // CHUNK_SIZE
        with (directory / f"episodes-{number:04d}.js").open("wb") as handle:
            handle.write(f"window.limboChunk({number}, {{\n".encode())
            for i, (row, line) in enumerate(zip(part, lines, strict=True)):
                handle.write(f'"{episode_uid(row)}": '.encode())
                handle.write(line)
                handle.write(b",\n" if i + 1 < len(part) else b"\n")
            handle.write(b"});\n")
        chunks += 1
    return chunks


def _cell_html(cell: Any, column: Any) -> dict[str, Any]:
    """Text and tooltip of a table cell for the template."""
    text = format_cell(cell, column)
    if isinstance(cell, RateCell) and cell.rate is not None:
        return {"main": f"{100 * cell.rate:.1f}%",
                "detail": f"[{100 * (cell.low or 0):.1f}–{100 * (cell.high or 0):.1f}]",
                "title": f"{cell.k} of {cell.n} episodes; Kish effective n {cell.n_eff:.1f}"}
    return {"main": text, "detail": "", "title": ""}


def _breakable(text: str) -> Markup:
    """A column title that may wrap after an underscore (``dup misleading_500``): headers
    wrap instead of widening a table past the window."""
    from markupsafe import Markup, escape  # jinja2's, on the report path only

    return Markup("_<wbr>").join(escape(part) for part in str(text).split("_"))


def svg_size(path: Path) -> tuple[int, int] | None:
    """The figure's natural size in CSS pixels (from the SVG's ``width``/``height`` in pt), so
    the page reserves its room before it loads (an anchor below it lands where it should) and
    shows every figure at one scale."""
    head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    found = re.search(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"', head)
    if found is None:
        return None
    return (round(float(found.group(1)) * PT_TO_PX), round(float(found.group(2)) * PT_TO_PX))


def _figure_entry(figure: Figure, out: Path) -> dict[str, Any]:
    svg = next(p for p in figure.files if p.suffix == ".svg")
    png = next(p for p in figure.files if p.suffix == ".png")
    size = svg_size(svg)
    return {"id": figure.id, "title": figure.title, "caption": figure.caption,
            "svg": svg.relative_to(out).as_posix(), "png": png.relative_to(out).as_posix(),
            "width": size[0] if size else None, "height": size[1] if size else None}


def render_html(out: Path, loaded: LoadedRecords, tables: Sequence[Result],
                figures: Sequence[FigureResult], messages: Sequence[str]) -> Path:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    out.mkdir(parents=True, exist_ok=True)
    assets = out / "assets"
    assets.mkdir(exist_ok=True)
    for name in ASSETS:
        shutil.copyfile(TEMPLATES / name, assets / name)
    chunks = write_data(loaded.rows, loaded, out / "data")
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["cell"] = _cell_html
    env.filters["breakable"] = _breakable
    shown = [t for t in tables if isinstance(t, Table)]
    skipped = [t for t in [*tables, *figures] if isinstance(t, Skipped)]
    drawn = [_figure_entry(f, out) for f in figures if isinstance(f, Figure)]
    headline = next((t for t in shown if t.id == HEADLINE[0]), None)
    missing = next((t.reason for t in tables if isinstance(t, Skipped) and t.id == HEADLINE[0]),
                   "no table of results by agent")
    html = env.get_template("report.html.j2").render(
        headline=headline, headline_missing=missing,
        headline_figure=next((f for f in drawn if f["id"] == HEADLINE[1]), None),
        tables=[t for t in shown if t.id not in (*HEADLINE, *REFERENCE)],
        reference=[t for t in shown if t.id in REFERENCE],
        figures=[f for f in drawn if f["id"] != HEADLINE[1]], skipped=skipped,
        messages=messages, episodes=len(loaded.rows), chunks=chunks,
        sources=[p.name for p in loaded.sources])
    index = out / "index.html"
    index.write_text(html, encoding="utf-8")
    return index
