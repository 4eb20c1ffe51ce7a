"""Figures: drawn from their tables as valid PNG and SVG, adaptive to many configurations,
skipped with their table's reason."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from reportkit import cell, load, write

from limbo_plugin.report.figures import MAX_BAR_SERIES, MAX_HEATMAP_ROWS, Figure, build_figures
from limbo_plugin.report.tables import build_tables
from limbo_plugin.report.tables.base import Skipped


def figures_for(tmp_path: Path, records: list) -> dict[str, Figure | Skipped]:
    loaded = load([write(tmp_path / "r.jsonl", records)])
    tables = build_tables(loaded.rows, loaded.repeats)
    return {f.id: f for f in build_figures(tables, tmp_path / "figures")}


def valid(figure: Figure | Skipped) -> None:
    assert isinstance(figure, Figure)
    png, svg = figure.files
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 5000
    root = ElementTree.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_many_configurations_become_a_heatmap(tmp_path: Path) -> None:
    agents = [f"litellm:m{i}" for i in range(MAX_BAR_SERIES + 2)]
    records = [r for i, agent in enumerate(agents)
               for r in cell(4, i % 4, agent=agent, behaviour="blind_retry")]
    figures = figures_for(tmp_path, records)
    valid(figures["dup_by_family"])
    svg = (tmp_path / "figures" / "dup_by_family.svg").read_text()
    assert "<image" in svg, "a heatmap is an embedded raster image"
    assert "<!-- litellm:m11 -->" in svg, "every configuration is labelled"


def test_a_very_tall_heatmap_is_capped_and_says_so(tmp_path: Path) -> None:
    agents = [f"litellm:m{i:03d}" for i in range(MAX_HEATMAP_ROWS + 5)]
    records = [r for agent in agents for r in cell(2, 1, agent=agent)]
    figures = figures_for(tmp_path, records)
    valid(figures["dup_by_family"])
    svg = (tmp_path / "figures" / "dup_by_family.svg").read_text()
    assert f"first {MAX_HEATMAP_ROWS} of {len(agents)} rows" in svg


def test_a_figure_without_its_table_is_skipped_with_the_reason(tmp_path: Path) -> None:
    figures = figures_for(tmp_path, cell(4, 1))
    waiting = figures["waiting_vs_keys"]
    assert isinstance(waiting, Skipped)
    assert waiting.reason == "no fired late-commit episode (timeout_late or timeout_late_tail)"
    assert not (tmp_path / "figures" / "waiting_vs_keys.png").exists()
    valid(figures["dup_by_family"])
    valid(figures["dup_by_contract"])


def test_the_waiting_figure_tells_variants_of_one_condition_apart(tmp_path: Path) -> None:
    late = {"fault_mode": "timeout_late",
            "fault": {"mode": "timeout_late", "t_fired": 0.0, "delay_s": 90.0}}
    records = [*cell(4, 1, **late), *cell(4, 3, instruction="no_cue", **late)]
    figures = figures_for(tmp_path, records)
    valid(figures["waiting_vs_keys"])
    svg = (tmp_path / "figures" / "waiting_vs_keys.svg").read_text()
    assert "vanilla / default" in svg and "vanilla / no_cue" in svg
