"""What each figure draws, recomputed from the records by hand: the bar heights of Figure 2
(``dup_by_family``) and Figure 3 (``dup_by_contract``), the points of Figure 4
(``waiting_vs_keys``) and the stacked widths of Figure 6 (``behaviour``). The drawn values are
caught at matplotlib's own ``bar``/``barh``/``errorbar`` calls, not read from the tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from reportkit import cell, load, write

from limbo_plugin.records import EpisodeRecord
from limbo_plugin.report.figures import build_figures
from limbo_plugin.report.tables import build_tables

LATE: dict[str, Any] = {"fault_mode": "timeout_late",
        "fault": {"mode": "timeout_late", "t_fired": 0.0, "delay_s": 90.0}}


def test_every_figure_draws_the_records_rates(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: dict[str, list[tuple[str | None, list[float]]]] = {"bar": [], "barh": [],
                                                               "errorbar": []}

    def spy(name: str) -> Any:
        real = getattr(Axes, name)

        def call(self: Axes, *args: Any, **kwargs: Any) -> Any:
            if len(args) >= 2:  # barh draws through bar with keywords only: not a figure's call
                drawn[name].append((kwargs.get("label"), [float(v) for v in args[1]]))
            return real(self, *args, **kwargs)
        return call

    for name in drawn:
        monkeypatch.setattr(Axes, name, spy(name))
    alpha = [*cell(6, 2, agent="scripted:alpha", behaviour="blind_retry"),
             *cell(4, 3, agent="scripted:alpha", behaviour="verify_then_skip", **LATE)]
    beta = [*cell(6, 5, agent="scripted:beta", behaviour="blind_retry",
                  first_instance=10),
            *cell(4, 1, agent="scripted:beta", condition="wait_60",
                  behaviour="verify_then_retry", **LATE)]
    records: list[EpisodeRecord] = [*alpha, *beta]
    loaded = load([write(tmp_path / "r.jsonl", records)])
    build_figures(build_tables(loaded.rows, loaded.repeats), tmp_path / "figures")

    def pct(k: int, n: int) -> object:
        return pytest.approx(100 * k / n)

    def dup(rs: list[EpisodeRecord]) -> tuple[int, int]:
        return sum(r.duplicates > 0 for r in rs), len(rs)

    # Figure 2: one series per configuration, a bar per family it has
    bars = {label: ys for label, ys in drawn["bar"]}
    lost = [r for r in alpha if r.fault_mode == "timeout_post"]
    late = [r for r in alpha if r.fault_mode == "timeout_late"]
    assert bars["scripted:alpha · vanilla"] == [pct(*dup(lost)), pct(*dup(late))]
    # Figure 3: vanilla episodes under committed faults (all one contract class here)
    vanilla = [r for r in records if r.condition == "vanilla"]
    assert [pct(*dup(vanilla))] in [ys for _, ys in drawn["bar"]]
    # Figure 4: EOS of the late commits, one point per condition
    for condition in ("vanilla", "wait_60"):
        mine = [r for r in records if r.fault_mode == "timeout_late"
                and r.condition == condition]
        eos = pct(sum(bool(r.eos) for r in mine), len(mine))
        assert any(ys == [eos] for _, ys in drawn["errorbar"]), condition
    # Figure 6: the blind_retry share of alpha's resolvable faults is its first bar's width
    widths = {label: ys for label, ys in drawn["barh"]}
    blind = sum(r.behaviour == "blind_retry" for r in lost) / len(lost)
    assert widths["blind_retry"][0] == pytest.approx(100 * blind)
