"""The paper's analyses beyond the numbered tables, each cell recomputed here from the records:
Appendix B's McNemar tests, §6.1's re-issue timing and §6.3's key reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportkit import load, record, write
from scipy.stats import binomtest

from limbo_plugin.records import EpisodeRecord, TraceEntry
from limbo_plugin.report.tables.base import RateCell, Table
from limbo_plugin.report.tables.mcnemar import table_appendix_b
from limbo_plugin.report.tables.reissues import table_key_reuse, table_reissue_timing

TOOL = "billing_create_charge"
INTENT = {"customer_id": "c1", "amount_cents": 100, "currency": "usd", "description": "x"}


def rows(tmp_path: Path, records: list[EpisodeRecord]) -> list:
    return load([write(tmp_path / "r.jsonl", records)]).rows


def calls(first_key: str | None, again_at: float | None, again_key: str | None,
          other_customer: bool = False) -> list[TraceEntry]:
    """The faulted call at t=0 (answered at 30 s) and, optionally, a later call of the tool."""
    def entry(i: int, t: float, key: str | None, **intent: Any) -> TraceEntry:
        args = {**INTENT, **intent, **({"idempotency_key": key} if key else {})}
        return TraceEntry(index=i, t_start=t, t_end=t + (30 if i == 1 else 1), origin="agent",
                          tool=TOOL, arguments=args, response={}, is_error=i == 1)

    out = [entry(1, 0.0, first_key)]
    if again_at is not None:
        extra = {"customer_id": "c2"} if other_customer else {}
        out.append(entry(2, again_at, again_key, **extra))
    return out


def late(i: int, trace: list[TraceEntry], duplicated: bool, **kw: Any) -> EpisodeRecord:
    return record(template=("t1", "t2")[i % 2], instance=i, fault_mode="timeout_late",
                  focal_tool=TOOL, trace=trace, duplicated=duplicated, focal_accepts_key=True,
                  **kw)


def test_appendix_b_pairs_each_condition_with_vanilla(tmp_path: Path) -> None:
    # 12 worlds; vanilla exactly once in the first 4, the guard in the first 10.
    vanilla = [record(template="t1", instance=i, eos=i < 4, experiment="e2") for i in range(12)]
    guard = [record(template="t1", instance=i, eos=i < 10, condition="guard", experiment="e2")
             for i in range(12)]
    aware = [record(template="t1", instance=i, eos=i in (0, 1, 2, 3, 5), condition="aware",
                    experiment="e2") for i in range(6)]  # only six worlds: six pairs
    table = table_appendix_b(rows(tmp_path, [*vanilla, *guard, *aware]))
    assert isinstance(table, Table)
    assert [(r["condition"], r["pairs"]) for r in table.rows] == [("aware", 6), ("guard", 12)]
    aware_row, guard_row = table.rows
    assert (guard_row["only_vanilla"], guard_row["only_condition"]) == (0, 6)
    p_guard = binomtest(0, 6, 0.5).pvalue  # exact McNemar: the discordant pairs are binomial
    p_aware = binomtest(0, 1, 0.5).pvalue
    assert guard_row["p"] == p_guard and aware_row["p"] == p_aware
    ordered = sorted([p_guard, p_aware])
    assert guard_row["p_holm"] == min(1.0, 2 * ordered[0])  # Holm: the smallest times two
    assert aware_row["p_holm"] == max(min(1.0, 2 * ordered[0]), min(1.0, ordered[1]))
    assert guard_row["eos_vanilla"] == 4 / 12 and guard_row["eos_condition"] == 10 / 12


def test_reissue_timing_splits_late_commits_at_a_minute(tmp_path: Path) -> None:
    soon = [late(i, calls(None, 40.0, None), duplicated=True) for i in range(4)]  # 10 s after
    waited = [late(10 + i, calls(None, 150.0, None), duplicated=i < 1) for i in range(3)]
    never = [late(20 + i, calls(None, None, None), duplicated=False) for i in range(2)]
    elsewhere = [late(30, calls(None, 40.0, None, other_customer=True), duplicated=False)]
    table = table_reissue_timing(rows(tmp_path, [*soon, *waited, *never, *elsewhere]))
    assert isinstance(table, Table)
    got = {r["reissue"]: r["duplicate_rate"] for r in table.rows}
    assert {k: (v.k, v.n) for k, v in got.items() if isinstance(v, RateCell)} == {
        "within a minute": (4, 4), "after a minute or more": (1, 3),
        "never re-issued": (0, 3)}  # a charge to another customer is not a re-issue


def test_key_reuse_by_the_key_the_retry_carried(tmp_path: Path) -> None:
    reused = [late(i, calls("k1", 40.0, "k1"), duplicated=False,
                   contract="keys_everywhere") for i in range(3)]
    unkeyed = [late(10 + i, calls(None, 40.0, "k2"), duplicated=True,
                    contract="keys_everywhere") for i in range(2)]
    changed = [late(20, calls("k1", 40.0, "k1-retry1"), duplicated=True,
                    contract="keys_everywhere")]
    table = table_key_reuse(rows(tmp_path, [*reused, *unkeyed, *changed]))
    assert isinstance(table, Table)
    got = {r["key"]: r["duplicate_rate"] for r in table.rows}
    assert {k: (v.k, v.n) for k, v in got.items() if isinstance(v, RateCell)} == {
        "reused the original key": (0, 3), "first attempt had no key": (2, 2),
        "new key on the retry": (1, 1)}
