"""Figures: drawn from their tables as valid PNG and SVG, adaptive to many configurations,
skipped with their table's reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from reportkit import cell, load, write

from limbo_plugin.report import figures as figure_module
from limbo_plugin.report.figures import (
    FONT_PT,
    MAX_BAR_SERIES,
    MAX_HEATMAP_ROWS,
    Figure,
    build_figures,
    style,
)
from limbo_plugin.report.tables import build_tables
from limbo_plugin.report.tables.base import Skipped

# A late commit 90 s after the timeout.
LATE: dict[str, Any] = {"fault_mode": "timeout_late",
                        "fault": {"mode": "timeout_late", "t_fired": 0.0, "delay_s": 90.0}}


def figures_for(tmp_path: Path, records: list) -> dict[str, Figure | Skipped]:
    loaded = load([write(tmp_path / "r.jsonl", records)])
    tables = build_tables(loaded.rows, loaded.repeats)
    return {f.id: f for f in build_figures(tables, tmp_path / "figures")}


def valid(figure: Figure | Skipped) -> None:
    assert isinstance(figure, Figure)
    png, svg, pdf = figure.files
    assert pdf.read_bytes().startswith(b"%PDF")
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
    assert waiting.reason == ("no fired late-commit episode (hidden outcome 'late') under "
                              "vanilla, wait_<Δ>, the guard or an oracle")
    assert not (tmp_path / "figures" / "waiting_vs_keys.png").exists()
    valid(figures["dup_by_family"])
    valid(figures["dup_by_contract"])


def test_the_waiting_figure_tells_variants_of_one_condition_apart(tmp_path: Path) -> None:
    records = [*cell(4, 1, **LATE), *cell(4, 3, instruction="no_cue", **LATE),
               *cell(4, 0, condition="wait_120", **LATE)]
    figures = figures_for(tmp_path, records)
    valid(figures["waiting_vs_keys"])
    svg = (tmp_path / "figures" / "waiting_vs_keys.svg").read_text()
    assert "vanilla / default" in svg and "vanilla / no_cue" in svg


def test_figures_are_fit_for_print(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every text of every figure is at least 9 pt at the size it is drawn (the paper's text
    width, never scaled down), PNGs are 300 dpi, and a caption names what is drawn."""
    from matplotlib.text import Text
    from PIL import Image

    sizes: dict[str, list[float]] = {}
    save = figure_module._save

    def spy(fig: object, directory: Path, name: str) -> tuple[Path, ...]:
        texts = fig.findobj(Text)  # type: ignore[attr-defined]
        sizes[name] = [t.get_fontsize() for t in texts if t.get_visible() and t.get_text()]
        assert fig.get_size_inches()[0] <= figure_module.FULL_WIDTH + 1e-9  # type: ignore[attr-defined]
        return save(fig, directory, name)

    monkeypatch.setattr(figure_module, "_save", spy)
    records = [*cell(6, 2, behaviour="blind_retry"),
               *cell(4, 1, condition="wait_60", behaviour="verify_then_retry", **LATE),
               *cell(4, 0, condition="wait_120", **LATE), *cell(4, 3, **LATE)]
    figures = figures_for(tmp_path, records)
    assert set(sizes) == {"dup_by_family", "dup_by_contract", "waiting_vs_keys", "behaviour"}
    for name, found in sizes.items():
        assert found and min(found) >= FONT_PT, (name, min(found))
        png = tmp_path / "figures" / f"{name}.png"
        assert min(Image.open(png).info["dpi"]) >= 299
    family = figures["dup_by_family"]
    assert isinstance(family, Figure) and family.caption.startswith("Bars:")


def test_a_heatmap_caption_says_heatmap(tmp_path: Path) -> None:
    agents = [f"litellm:m{i}" for i in range(MAX_BAR_SERIES + 2)]
    figures = figures_for(tmp_path, [r for a in agents for r in cell(2, 1, agent=a)])
    family = figures["dup_by_family"]
    assert isinstance(family, Figure)
    assert family.caption.startswith("Heatmap:") and "whisker" not in family.caption


def test_every_series_has_its_own_look() -> None:
    looks = [(style(i)["color"], style(i)["marker"], style(i)["hatch"]) for i in range(64)]
    assert len(set(looks)) == 64
    bars = [(style(i)["color"], style(i)["hatch"]) for i in range(64)]
    assert len(set(bars)) == 64  # bars have no marker: colour and hatch alone differ


def test_the_waiting_figure_needs_a_waiting_policy(tmp_path: Path) -> None:
    """Late commits without any wait_<Δ> policy (not E5): one dot per panel compares nothing,
    so the figure is skipped with the reason."""
    figures = figures_for(tmp_path, [*cell(4, 1, **LATE), *cell(4, 2, condition="guard",
                                                                   **LATE)])
    waiting = figures["waiting_vs_keys"]
    assert isinstance(waiting, Skipped) and "no wait_<Δ> condition" in waiting.reason
    assert not (tmp_path / "figures" / "waiting_vs_keys.png").exists()


def test_the_contract_figure_tells_its_classes_apart(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """One contract variant, two contract classes: a colour per class, named in a legend."""
    seen: dict[str, object] = {}
    save = figure_module._save

    def spy(fig: object, directory: Path, name: str) -> tuple[Path, ...]:
        seen[name] = fig
        return save(fig, directory, name)

    monkeypatch.setattr(figure_module, "_save", spy)
    records = [*cell(6, 2), *cell(6, 4, focal_tool="x_publish", first_instance=10)]
    figures = figures_for(tmp_path, records)
    valid(figures["dup_by_contract"])
    (ax,) = seen["dup_by_contract"].axes  # type: ignore[attr-defined]
    legend = ax.get_legend()
    assert legend is not None
    names = [t.get_text() for t in legend.get_texts()]
    assert len(names) == len(set(names)) == 2
    # The legend says what its entries are, not only the contract variant's name.
    assert legend.get_title().get_text() == "contract class (native contract)"
    colours = {tuple(p.get_facecolor()) for p in ax.patches if p.get_height() > 0}
    assert len(colours) == 2


def test_one_tight_box_for_three_files_leaves_each_its_margin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PNG's tight box, found once, is used for the SVG and the PDF too: it must hold what
    each of them would have measured on its own (nothing cut), and be at most 0.05 in larger."""
    import io
    import re

    boxes: list[tuple[float, float, dict[str, tuple[float, float]]]] = []
    found = figure_module._tight_box

    def measured(fig: Any) -> Any:
        box = found(fig)
        own = {}
        for fmt in ("svg", "pdf"):
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, bbox_inches="tight")
            text = buffer.getvalue().decode("latin-1")
            match = (re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', text) if fmt == "svg"
                     else re.search(r"/MediaBox \[ 0 0 ([\d.]+) ([\d.]+) \]", text))
            assert match is not None
            own[fmt] = (float(match[1]) / 72, float(match[2]) / 72)
        boxes.append((box.width, box.height, own))
        return box

    monkeypatch.setattr(figure_module, "_tight_box", measured)
    records = [r for i, agent in enumerate(["litellm:a", "litellm:b"])
               for r in cell(4, i + 1, agent=agent, behaviour="blind_retry")]
    figures_for(tmp_path, records)
    assert len(boxes) >= 3
    for width, height, own in boxes:
        for fmt, (own_width, own_height) in own.items():
            assert own_width - 0.002 <= width <= own_width + 0.05, fmt
            assert own_height - 0.002 <= height <= own_height + 0.05, fmt
