"""What the report tests share besides fixtures: synthetic episode records with known
outcomes, the report built from real episodes, a headless browser. A module of its own
(imported as ``reportkit``): ``from conftest import …`` finds whichever ``conftest`` was
imported first, so it depends on collection order."""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbo_plugin.records import EffectCount, EpisodeRecord, TraceEntry
from limbo_plugin.report.build import ReportOutcome
from limbo_plugin.report.load import LoadedRecords, SpecFacts, load_records
from limbo_plugin.spec.registry import SpecRegistry

FACTS = SpecFacts.of(SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs"))
"""The project's specs as the tables see them (loaded once: tables are built outside fixtures)."""

MODE_FAMILY = {
    "timeout_pre": "not_executed", "http500_pre": "not_executed", "timeout_post": "lost_ack",
    "http500_post": "misleading_500", "partial_batch": "partial_batch",
    "timeout_late": "late_commit", "timeout_late_tail": "late_commit",
    "redelivery": "redelivery", "http503": "explicit", "none": "none",
}
FAULT_CLASS = {"lost_ack": "resolvable", "misleading_500": "resolvable",
               "partial_batch": "resolvable", "late_commit": "unresolvable",
               "redelivery": "unresolvable"}


def record(*, template: str = "tpl_a", instance: int = 0, focal_write: str = "w1",
           fault_mode: str = "timeout_post", agent: str = "scripted:alpha",
           duplicated: bool = False, eos: bool | None = None, ts: bool = True,
           overclaim: bool = False, fired: bool = True, focal_tool: str | None = "tickets_create",
           **fields: Any) -> EpisodeRecord:
    """One record; EOS defaults to 'task done and no duplicate'."""
    family = MODE_FAMILY[fault_mode]
    focal = "baseline" if fault_mode == "none" else focal_write
    values: dict[str, Any] = {
        "ts": ts, "eos": (ts and not duplicated) if eos is None else eos,
        "duplicates": int(duplicated), "residual_duplicates": int(duplicated),
        "collateral": 0, "unrequested": 0, "overclaim": overclaim,
        "effects": [EffectCount(id="e", required=1, committed=1 + int(duplicated),
                                standing=1 + int(duplicated))],
        "episode_id": f"{template}-i{instance}-{focal}-{fault_mode}", "template": template,
        "instance": instance, "focal_write": focal, "fault_mode": fault_mode,
        "family": family, "fault_class": FAULT_CLASS.get(family), "contract": "native",
        "docs": "default", "instruction": "default", "condition": "vanilla",
        "operator": "truthful", "agent": agent, "world_seed": 1, "base_seed": 2,
        "focal_tool": None if fault_mode == "none" else focal_tool,
        "focal_idempotency": "non_idempotent", "focal_verification": "strong",
        "focal_accepts_key": False, "focal_irreversible": False,
        "fired": fired if fault_mode != "none" else False,
        "fault": {"mode": fault_mode, "t_fired": 0.0} if fired else {"mode": fault_mode},
        "final_status": "completed", "tool_calls": 5, "sim_seconds": 60.0,
    }
    values.update(fields)
    return EpisodeRecord(**values)


def cell(n: int, k: int, *, templates: Iterable[str] = ("tpl_a", "tpl_b"),
         first_instance: int = 0, **fields: Any) -> list[EpisodeRecord]:
    """``n`` episodes (spread over ``templates``) of which the first ``k`` duplicated."""
    names = list(templates)
    out = []
    for i in range(n):
        out.append(record(template=names[i % len(names)],
                          instance=first_instance + i // len(names), duplicated=i < k,
                          **fields))
    return out


def trace(*calls: tuple[str, float, float, bool, str]) -> list[TraceEntry]:
    """``(tool, t_start, t_end, is_error, origin)`` tuples as trace entries."""
    return [TraceEntry(index=i + 1, t_start=a, t_end=b, origin=origin, tool=tool,
                       arguments={}, response={"error": {"type": "timeout"}} if err else {},
                       is_error=err)
            for i, (tool, a, b, err, origin) in enumerate(calls)]


def clusters(records: Sequence[EpisodeRecord], test: Callable[[EpisodeRecord], bool]
             ) -> dict[str, list[bool]]:
    out: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        out[r.template].append(test(r))
    return dict(out)


def within_cell_rho(scope: Sequence[EpisodeRecord], test: Callable[[EpisodeRecord], bool]
                    ) -> float:
    """ρ by template within cells (configuration × family), from two least-squares fits:
    SSW is the residual of y ~ cell:template, SSB what cell:template explains beyond y ~ cell
    (the ANOVA of SPEC §7 computed without Limbo's code)."""
    import numpy as np
    import pandas as pd
    import statsmodels.formula.api as smf

    data = pd.DataFrame({"y": [float(test(r)) for r in scope],
                         "cell": [f"{r.experiment}/{r.fingerprint()}/{r.family}" for r in scope],
                         "group": [f"{r.experiment}/{r.fingerprint()}/{r.family}/{r.template}"
                                   for r in scope]})
    if data["group"].nunique() == data["cell"].nunique() or data["y"].nunique() < 2:
        return 0.0
    within = smf.ols("y ~ C(group)", data).fit()
    by_cell = smf.ols("y ~ C(cell)", data).fit()
    ssw, df_w = within.ssr, len(scope) - data["group"].nunique()
    ssb, df_b = by_cell.ssr - within.ssr, data["group"].nunique() - data["cell"].nunique()
    sizes: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c, g in zip(data["cell"], data["group"], strict=True):
        sizes[c][g] += 1
    n0 = sum(sum(t.values()) - sum(v * v for v in t.values()) / sum(t.values())
             for t in sizes.values()) / df_b
    msb, msw = ssb / df_b, ssw / df_w
    if msb + (n0 - 1) * msw <= 1e-12:  # no variation left within the cells: ρ is not identified
        return 0.0
    return float(np.clip((msb - msw) / (msb + (n0 - 1) * msw), 0.0, 1.0))


def same_configs(scope: Iterable[EpisodeRecord], cell_records: Iterable[EpisodeRecord]
                 ) -> list[EpisodeRecord]:
    """The episodes of ``scope`` run under a configuration of ``cell_records`` within its
    experiment: what a cell's ρ is estimated from by default (each configuration's own cells)."""
    configs = {(r.experiment, r.fingerprint()) for r in cell_records}
    return [r for r in scope if (r.experiment, r.fingerprint()) in configs]


def write(path: Path, records: Iterable[EpisodeRecord]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for r in records:
            handle.write(r.model_dump_json() + "\n")
    return path


def load(paths: Iterable[str | Path]) -> LoadedRecords:
    """Load record files as ``limbo report`` does, with the project's specs."""
    return load_records(list(paths), FACTS)


@dataclass
class BuiltReport:
    records: list[EpisodeRecord]
    outcome: ReportOutcome

    @property
    def out(self) -> Path:
        return self.outcome.out


@dataclass
class Browser:
    executable: str
    profile: Path

    def dump_dom(self, url: str, budget_ms: int = 5000) -> str:
        """The DOM after the page's scripts ran (virtual time lets chunk scripts load)."""
        done = subprocess.run(
            [self.executable, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={self.profile}", f"--virtual-time-budget={budget_ms}",
             "--dump-dom", url],
            capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None
