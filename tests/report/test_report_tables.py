"""Every table from synthetic records with known rates: counts, rates and intervals checked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from reportkit import cell, clusters, load, record, same_configs, within_cell_rho, write

from limbo_plugin.records import EpisodeRecord, TraceEntry
from limbo_plugin.report.render import to_csv, to_json, to_markdown
from limbo_plugin.report.tables import all_tables, build_tables
from limbo_plugin.report.tables.agents import table3
from limbo_plugin.report.tables.base import RateCell, Skipped, Table
from limbo_plugin.report.tables.behaviour import table_behaviour
from limbo_plugin.report.tables.conditions import table7
from limbo_plugin.report.tables.contracts import table5, table_contract_classes
from limbo_plugin.report.tables.cue import table10
from limbo_plugin.report.tables.harnesses import table8, table9
from limbo_plugin.report.tables.overclaim import table_overclaim
from limbo_plugin.report.tables.stakes import table_stakes
from limbo_plugin.report.tables.waiting import table6
from limbo_plugin.stats import rate_with_interval, tost_independent
from limbo_plugin.store.view import EpisodeView


def rows_of(tmp_path: Path, records: Sequence[EpisodeRecord]) -> list[EpisodeView]:
    return load([write(tmp_path / "records.jsonl", records)]).rows


def counted(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    """The episodes a standard outcome's ρ is estimated on: fired ones, every fault-free one."""
    return [r for r in records if r.fired or r.family == "none"]


def check(got: object, k: int, n: int, cell_records: Sequence[EpisodeRecord],
          scope: Sequence[EpisodeRecord], test: Callable[[EpisodeRecord], bool]) -> None:
    """A rate cell is k/n with the Wilson-on-Kish interval at the within-cell ρ of ``scope``
    (every episode the outcome is defined on: :func:`counted` for the standard outcomes)."""
    assert isinstance(got, RateCell)
    assert (got.k, got.n) == (k, n)
    assert got.rate == pytest.approx(k / n)
    icc = within_cell_rho(same_configs(scope, cell_records), test)  # its configuration's cells
    expected = rate_with_interval(clusters(cell_records, test), icc=icc)
    assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert got.low is not None and got.rate is not None and got.high is not None
    assert got.low <= got.rate <= got.high


def dup(r: EpisodeRecord) -> bool:
    return r.duplicates > 0


def flag(name: str) -> Callable[[EpisodeRecord], bool]:
    """A yes/no outcome of a record (``ts``, ``eos``, ``overclaim``): every synthetic record
    here has it set, so an unset one is a broken fixture, not a no."""
    def test(r: EpisodeRecord) -> bool:
        value = getattr(r, name)
        assert isinstance(value, bool), (name, r.episode_id)
        return value
    return test


# -- Table 3 -------------------------------------------------------------------------------------
def test_table3_agents_side_by_side_with_known_rates(tmp_path: Path) -> None:
    alpha_lost = cell(10, 3, fault_mode="timeout_post", agent="scripted:alpha",
                      templates=("t1", "t2", "t3"))
    alpha_late = cell(8, 6, fault_mode="timeout_late", agent="scripted:alpha",
                      overclaim=True, templates=("t1", "t2"))
    alpha_pre = cell(4, 0, fault_mode="timeout_pre", agent="scripted:alpha", ts=False,
                     templates=("t1", "t2"))
    alpha_pre[0] = alpha_pre[0].model_copy(update={"ts": True, "eos": True})
    alpha_none = cell(2, 0, fault_mode="none", agent="scripted:alpha")
    beta_lost = cell(6, 0, fault_mode="timeout_post", agent="scripted:beta",
                     templates=("t1", "t2", "t3"))
    beta_late = cell(4, 4, fault_mode="timeout_late", agent="scripted:beta", overclaim=True)
    unfired = [record(template="t9", fault_mode="timeout_late", agent="scripted:beta",
                      fired=False, duplicated=True)]
    everything = [*alpha_lost, *alpha_late, *alpha_pre, *alpha_none, *beta_lost, *beta_late,
                  *unfired]
    table = table3(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [r["agent"] for r in table.rows] == ["scripted:alpha", "scripted:beta"]
    keys = [c.key for c in table.columns]
    assert keys[:2] == ["agent", "faulted"]
    assert keys[2:] == ["dup_not_executed", "dup_lost_ack", "dup_late_commit", "dup_none",
                        "ts_not_executed", "eos", "overclaim"]
    scope = counted(everything)
    alpha, beta = table.rows
    assert alpha["faulted"] == 22 and beta["faulted"] == 10  # the unfired episode is not counted
    check(alpha["dup_lost_ack"], 3, 10, alpha_lost, scope, dup)
    check(alpha["dup_late_commit"], 6, 8, alpha_late, scope, dup)
    check(alpha["dup_none"], 0, 2, alpha_none, scope, dup)
    check(beta["dup_lost_ack"], 0, 6, beta_lost, scope, dup)
    check(beta["dup_late_commit"], 4, 4, beta_late, scope, dup)
    check(alpha["ts_not_executed"], 1, 4, alpha_pre, scope, flag("ts"))
    alpha_faulted = [*alpha_lost, *alpha_late, *alpha_pre]
    check(alpha["eos"], 10, 22, alpha_faulted, scope, flag("eos"))
    check(alpha["overclaim"], 8, 22, alpha_faulted, scope, flag("overclaim"))
    check(beta["overclaim"], 4, 10, [*beta_lost, *beta_late], scope, flag("overclaim"))
    # beta never met a _pre world: an empty cell, never a zero.
    assert isinstance(beta["ts_not_executed"], RateCell) and beta["ts_not_executed"].n == 0
    beta_not_executed = beta["dup_not_executed"]
    assert isinstance(beta_not_executed, RateCell) and beta_not_executed.n == 0
    markdown = to_markdown(table)
    assert "| scripted:beta | 10 | — | 0.0% [" in markdown
    assert "30.0% [" in markdown and "(3/10)" in markdown


def test_table3_labels_every_varying_configuration_field(tmp_path: Path) -> None:
    records = [*cell(4, 1, contract="native"), *cell(4, 2, contract="keys_everywhere")]
    table = table3(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    assert [c.key for c in table.columns][:2] == ["agent", "contract"]
    assert [(r["contract"], r["dup_lost_ack"].k) for r in table.rows] == [  # type: ignore[union-attr]
        ("keys_everywhere", 2), ("native", 1)]


def test_table3_orders_wait_bounds_as_numbers(tmp_path: Path) -> None:
    records = [*cell(2, 1, condition="wait_3600"), *cell(2, 1, condition="wait_60"),
               *cell(2, 1, condition="vanilla")]
    table = table3(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    assert [r["condition"] for r in table.rows] == ["vanilla", "wait_60", "wait_3600"]


def test_table3_skipped_without_faulted_episodes(tmp_path: Path) -> None:
    result = table3(rows_of(tmp_path, cell(3, 0, fault_mode="none")))
    assert isinstance(result, Skipped) and result.reason == "no episode with a fired fault"


# -- Table 5 -------------------------------------------------------------------------------------
def test_table5_is_the_papers_families_by_contract_and_condition(tmp_path: Path) -> None:
    """Rows are fault families, then the key-attachment share and EOS; columns native first,
    vanilla first; only conditions run under both contracts; matched worlds per agent."""
    def keyed_trace(key: bool) -> list:
        arguments = {"project": "OPS", "title": "x", **({"idempotency_key": "k"} if key else {})}
        return [TraceEntry(index=1, t_start=0.0, t_end=30.0, origin="agent",
                           tool="tickets_create", arguments=arguments,
                           response={"error": {"type": "timeout"}}, is_error=True)]

    def late(k: int, templates: tuple[str, ...] = ("t1", "t2"), **kw: Any
             ) -> list[EpisodeRecord]:
        return cell(4, k, fault_mode="timeout_late", templates=templates, **kw)

    native_late = late(3, experiment="e2")
    native_lost = cell(4, 0, fault_mode="timeout_post", experiment="e2", templates=("t1", "t2"))
    native_guard = late(3, experiment="e2", condition="guard")
    native_aware = late(0, experiment="e2", condition="aware")  # no keys_everywhere twin
    keys_late = [r.model_copy(update={"trace": keyed_trace(i > 0)})
                 for i, r in enumerate(late(1, experiment="e2k", contract="keys_everywhere"))]
    keys_guard = late(0, experiment="e2k", contract="keys_everywhere", condition="guard")
    keys_lost = cell(4, 0, fault_mode="timeout_post", experiment="e2k",
                     contract="keys_everywhere", templates=("t1", "t2"))
    extra = late(4, experiment="e2", templates=("t9",), first_instance=50)  # native only
    everything = [*native_late, *native_lost, *native_guard, *native_aware, *keys_late,
                  *keys_guard, *keys_lost, *extra]
    table = table5(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [c.key for c in table.columns] == [
        "faults", "native|vanilla", "native|guard", "keys_everywhere|vanilla",
        "keys_everywhere|guard"]
    # lost_ack ran only without the guard: not a world every column has
    assert [r["faults"] for r in table.rows] == [
        "late_commit", "committed faults and redelivery",
        "key attached (agent's faulted call)", "EOS (all fired faulted episodes)"]
    late_row, total, key_row, eos_row = table.rows
    scope = counted(everything)
    check(late_row["native|vanilla"], 3, 4, native_late, scope, dup)  # t9 is not matched
    check(late_row["keys_everywhere|vanilla"], 1, 4, keys_late, scope, dup)
    check(late_row["keys_everywhere|guard"], 0, 4, keys_guard, scope, dup)
    total_cell, key_cell, eos_cell = (
        total["native|vanilla"], key_row["keys_everywhere|vanilla"], eos_row["native|vanilla"])
    assert isinstance(total_cell, RateCell) and (total_cell.k, total_cell.n) == (3, 4)
    assert isinstance(key_cell, RateCell) and (key_cell.k, key_cell.n) == (3, 4)
    assert isinstance(eos_cell, RateCell) and eos_cell.n == 4
    assert "12 episode(s) on worlds only some of them ran are left out" in " ".join(table.notes)


def test_table5_skipped_without_two_contracts(tmp_path: Path) -> None:
    result = table5(rows_of(tmp_path, cell(4, 1, fault_mode="timeout_late")))
    assert isinstance(result, Skipped) and "two contract variants" in result.reason


def test_contract_classes_line_up_across_variants(tmp_path: Path) -> None:
    strong_native = cell(6, 3, fault_mode="timeout_post", focal_tool="tickets_create")
    strong_keys = cell(6, 1, fault_mode="timeout_post", focal_tool="tickets_create",
                       contract="keys_everywhere", focal_idempotency="key_optional",
                       focal_accepts_key=True)
    eventual = cell(4, 4, fault_mode="timeout_late", focal_tool="email_send",
                    focal_verification="eventual")
    guarded = cell(4, 0, fault_mode="redelivery", focal_tool="email_send", condition="guard")
    ignored = cell(5, 5, fault_mode="timeout_pre")  # not a committed fault
    everything = [*strong_native, *strong_keys, *eventual, *guarded, *ignored]
    table = table_contract_classes(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [c.key for c in table.columns] == ["contract_class", "native", "keys_everywhere"]
    # tickets_create stays "non_idempotent_strong" under keys everywhere: rows line up.
    assert [r["contract_class"] for r in table.rows] == [
        "non_idempotent_strong", "non_idempotent_eventual", "all classes"]
    scope = counted(everything)
    strong, eventual_row, total = table.rows
    check(strong["native"], 3, 6, strong_native, scope, dup)
    check(strong["keys_everywhere"], 1, 6, strong_keys, scope, dup)
    check(eventual_row["native"], 4, 4, eventual, scope, dup)  # the guard is not vanilla
    check(total["native"], 7, 10, [*strong_native, *eventual], scope, dup)


def test_contract_classes_skipped_without_committed_faults(tmp_path: Path) -> None:
    result = table_contract_classes(rows_of(tmp_path, cell(4, 1, fault_mode="http500_pre")))
    assert isinstance(result, Skipped) and "committed-fault" in result.reason


# -- Table 6 -------------------------------------------------------------------------------------
def test_table6_waiting_versus_keys(tmp_path: Path) -> None:
    def tail(delays: list[float], k: int, condition: str, **kw: object) -> list[EpisodeRecord]:
        out = []
        for i, delay in enumerate(delays):
            out.append(record(template=("t1", "t2")[i % 2], instance=i, fault_mode=
                              "timeout_late_tail", condition=condition, duplicated=i < k,
                              fault={"mode": "timeout_late_tail", "t_fired": 0.0, "delay_s": delay},
                              sim_seconds=60.0 * (i + 1), **kw))  # type: ignore[arg-type]
        return out

    wait_300 = tail([100.0, 200.0, 400.0, 900.0], 2, "wait_300")
    vanilla = tail([100.0, 200.0, 400.0, 900.0], 3, "vanilla")
    keys = tail([100.0, 200.0, 400.0, 900.0], 0, "guard", contract="keys_everywhere")
    fixed = cell(4, 1, fault_mode="timeout_late", condition="wait_120",
                 fault={"mode": "timeout_late", "t_fired": 0.0, "delay_s": 90.0})
    scope = [*wait_300, *vanilla, *keys, *fixed, *cell(3, 3, fault_mode="timeout_post")]
    table = table6(rows_of(tmp_path, scope))
    assert isinstance(table, Table)
    order = [(r["delay"], r["contract"], r["condition"]) for r in table.rows]
    assert order == [("fixed", "native", "wait_120"), ("tail", "native", "vanilla"),
                     ("tail", "native", "wait_300"), ("tail", "keys_everywhere", "guard")]
    fixed_row, vanilla_row, wait_row, keys_row = table.rows
    eos = flag("eos")
    check(wait_row["eos"], 2, 4, wait_300, scope, eos)
    check(vanilla_row["eos"], 1, 4, vanilla, scope, eos)
    check(keys_row["eos"], 4, 4, keys, scope, eos)
    check(fixed_row["duplicate_rate"], 1, 4, fixed, scope, dup)
    assert wait_row["time_min"] == pytest.approx((1 + 2 + 3 + 4) / 4)
    assert wait_row["p_delay_within_bound"] == pytest.approx(0.5)  # 100 s and 200 s ≤ 300 s
    assert fixed_row["p_delay_within_bound"] == pytest.approx(1.0)
    assert vanilla_row["p_delay_within_bound"] is None  # no assumed bound: no share


def test_table6_skipped_without_late_commits(tmp_path: Path) -> None:
    result = table6(rows_of(tmp_path, cell(3, 1)))
    assert isinstance(result, Skipped) and "late-commit" in result.reason


# -- Table 7 -------------------------------------------------------------------------------------
Records = list[EpisodeRecord]


def table7_records() -> tuple[Records, Records, Records, Records]:
    """Two agents under vanilla (one with usage per call), one under the guard, and a
    fault-free episode under each condition: ``vanilla_a, vanilla_b, guard_a, everything``."""
    vanilla_a = cell(4, 2, agent="litellm:a", tool_calls=6, escalations=0,
                     usage={"prompt_tokens": 100, "completion_tokens": 20})
    vanilla_b = cell(4, 0, agent="litellm:b", tool_calls=8, escalations=2,
                     usage={"prompt_tokens": 300, "completion_tokens": 60})
    guard_a = cell(4, 1, agent="litellm:a", condition="guard", tool_calls=10, escalations=1)
    baseline = [record(template="t1", fault_mode="none", agent="litellm:a", tool_calls=2),
                record(template="t1", fault_mode="none", agent="litellm:a", tool_calls=2,
                       condition="guard")]
    everything = [*vanilla_a, *vanilla_b, *guard_a, *baseline]
    return vanilla_a, vanilla_b, guard_a, everything


def test_table7_conditions_with_costs(tmp_path: Path) -> None:
    vanilla_a, vanilla_b, guard_a, everything = table7_records()
    table = table7(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    labels = [(r["condition"], r["agent"]) for r in table.rows]
    assert labels == [("vanilla", "litellm:a"), ("vanilla", "litellm:b"),
                      ("vanilla", "all agents"), ("guard", "litellm:a")]
    faulted = counted(everything)
    a, b, pooled, guard = table.rows
    check(a["duplicate_rate"], 2, 4, vanilla_a, faulted, dup)
    check(pooled["duplicate_rate"], 2, 8, [*vanilla_a, *vanilla_b], faulted, dup)
    check(guard["eos"], 3, 4, guard_a, faulted, flag("eos"))
    check(b["ts"], 4, 4, vanilla_b, faulted, flag("ts"))
    # Costs are over every episode of the row, the fault-free one included.
    assert a["episodes"] == 5 and a["tool_calls"] == pytest.approx((4 * 6 + 2) / 5)
    assert b["operator_min"] == pytest.approx(30.0)
    assert guard["operator_min"] == pytest.approx(4 * 15.0 / 5)
    assert a["tokens"] == pytest.approx(120.0)  # the baseline recorded no usage
    assert pooled["tokens"] == pytest.approx((4 * 120 + 4 * 360) / 8)
    assert guard["tokens"] is None  # no usage recorded: empty, not zero


def test_table7_in_the_papers_layout(tmp_path: Path) -> None:
    """Conditions as columns; each agent's EOS, duplicate rate and TS; the bottom rows the mean
    cost per episode over all agents, fault-free episodes included."""
    from limbo_plugin.report.render import to_csv, to_markdown
    from limbo_plugin.report.tables.conditions_paper import table7_paper

    vanilla_a, _, guard_a, everything = table7_records()
    table = table7_paper(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [c.key for c in table.columns] == ["agent", "measure", "vanilla", "guard"]
    assert [(r["agent"], r["measure"]) for r in table.rows] == [
        ("litellm:a", "EOS"), ("litellm:a", "duplicate rate"), ("litellm:a", "TS"),
        ("litellm:b", "EOS"), ("litellm:b", "duplicate rate"), ("litellm:b", "TS"),
        ("all agents (pooled)", "tool calls"), ("all agents (pooled)", "operator min"),
        ("all agents (pooled)", "tokens")]
    faulted = counted(everything)
    check(table.find(agent="litellm:a", measure="duplicate rate")["vanilla"], 2, 4, vanilla_a,
          faulted, dup)
    check(table.find(agent="litellm:a", measure="EOS")["guard"], 3, 4, guard_a, faulted,
          flag("eos"))
    assert table.find(agent="litellm:b", measure="TS")["guard"] is None  # b ran no guard
    calls = table.find(measure="tool calls")
    assert calls["vanilla"] == pytest.approx((4 * 6 + 2 + 4 * 8) / 9)
    assert calls["guard"] == pytest.approx((4 * 10 + 2) / 5)
    assert table.find(measure="operator min")["vanilla"] == pytest.approx(4 * 2 * 15 / 9)
    tokens = table.find(measure="tokens")
    assert tokens["vanilla"] == pytest.approx((4 * 120 + 4 * 360) / 8)
    assert tokens["guard"] is None  # no usage recorded: empty, not zero
    lines = to_csv(table).splitlines()
    header, cost = lines[0].split(","), lines[-3].split(",")
    assert float(cost[header.index("vanilla")]) == calls["vanilla"]
    assert f"| {calls['vanilla']:.1f} |" in to_markdown(table)


def test_table7_compares_each_experiments_conditions_on_shared_worlds(tmp_path: Path
                                                                      ) -> None:
    """E2 (all writes, vanilla duplicates on the writes E4 does not run) beside E4 (two writes,
    a paraphrased prompt): each experiment is its own block, and within a block an agent's
    configurations share their worlds; E2's vanilla is never set against E4's paraphrase."""
    e2_shared = cell(8, 0, agent="litellm:a", experiment="e2", templates=("t1", "t2"))
    e2_more = cell(8, 8, agent="litellm:a", experiment="e2", templates=("t3", "t4"))
    e2_guard = cell(8, 0, agent="litellm:a", experiment="e2", condition="guard",
                    templates=("t1", "t2"))
    e4_vanilla = cell(8, 1, agent="litellm:a", experiment="e4", templates=("t1", "t2"))
    e4_paraphrase = cell(8, 1, agent="litellm:a", experiment="e4", condition="paraphrase_1",
                         templates=("t1", "t2"))
    everything = [*e2_shared, *e2_more, *e2_guard, *e4_vanilla, *e4_paraphrase]
    table = table7(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [(r["experiment"], r["condition"]) for r in table.rows] == [
        ("e2", "vanilla"), ("e2", "guard"), ("e4", "vanilla"), ("e4", "paraphrase_1")]
    e2_vanilla, _, e4_plain, e4_para = table.rows
    # E2's guard ran only t1, t2: vanilla is compared on those worlds (0/8, not 8/16).
    check(e2_vanilla["duplicate_rate"], 0, 8, e2_shared, counted(everything), dup)
    check(e4_plain["duplicate_rate"], 1, 8, e4_vanilla, counted(everything), dup)
    check(e4_para["duplicate_rate"], 1, 8, e4_paraphrase, counted(everything), dup)
    assert "e2: Compared on the worlds every configuration has (per agent): 8 episode(s)" \
        in " ".join(table.notes)


def test_table7_skipped_with_one_condition(tmp_path: Path) -> None:
    result = table7(rows_of(tmp_path, cell(3, 1)))
    assert isinstance(result, Skipped) and "at least two conditions" in result.reason


# -- variants beside conditions -------------------------------------------------------------------
def test_variant_episodes_are_their_own_rows_never_pooled_into_their_condition(
        tmp_path: Path) -> None:
    """E4 runs documentation and operator variants under E2's conditions, E6 the no_cue
    instruction under E1's vanilla: read together, each variant is its own row (Tables 6, 7)
    or column (Table 5), defaults first, not mixed into the plain condition's rate."""
    plain = cell(4, 1, fault_mode="timeout_late")
    no_docs = cell(4, 3, fault_mode="timeout_late", docs="no_consistency_docs")
    silent = cell(4, 0, fault_mode="timeout_late", condition="guard", operator="unresponsive")
    no_cue = cell(4, 4, fault_mode="timeout_late", instruction="no_cue")
    scope = [*plain, *no_docs, *silent, *no_cue]
    rows = rows_of(tmp_path, scope)

    seven = table7(rows)
    assert isinstance(seven, Table)
    assert [c.key for c in seven.columns][:4] == ["condition", "docs", "instruction",
                                                  "operator"]
    assert [(r["condition"], r["docs"], r["instruction"], r["operator"]) for r in seven.rows] == [
        ("vanilla", "default", "default", "truthful"),
        ("vanilla", "default", "no_cue", "truthful"),
        ("vanilla", "no_consistency_docs", "default", "truthful"),
        ("guard", "default", "default", "unresponsive")]
    check(seven.rows[0]["duplicate_rate"], 1, 4, plain, scope, dup)
    check(seven.rows[2]["duplicate_rate"], 3, 4, no_docs, scope, dup)

    six = table6(rows)
    assert isinstance(six, Table)
    assert [(r["condition"], r["docs"], r["instruction"]) for r in six.rows][:3] == [
        ("vanilla", "default", "default"), ("vanilla", "default", "no_cue"),
        ("vanilla", "no_consistency_docs", "default")]
    check(six.rows[1]["duplicate_rate"], 4, 4, no_cue, scope, dup)

    five = table5(rows)  # one contract variant: nothing for Table 5 to compare
    assert isinstance(five, Skipped)


def test_without_variants_the_tables_keep_their_columns(tmp_path: Path) -> None:
    rows = rows_of(tmp_path, [*cell(4, 1, fault_mode="timeout_late"),
                              *cell(4, 0, fault_mode="timeout_late", condition="guard")])
    for table in (table6(rows), table7(rows)):
        assert isinstance(table, Table)
        assert not {"docs", "instruction", "operator"} & {c.key for c in table.columns}


# -- Tables 8 and 9 ------------------------------------------------------------------------------
def test_tables_8_and_9_harnesses(tmp_path: Path) -> None:
    minimal = cell(4, 1, agent="litellm:m1")
    copilot = cell(4, 2, agent="harness:copilot:m1",
                   usage={"prompt_tokens": 1000, "completion_tokens": 200})
    copilot_late = cell(2, 2, agent="harness:copilot:m1", fault_mode="timeout_late")
    copilot_guard = cell(4, 0, agent="harness:copilot:m1", condition="guard")
    copilot_keys = cell(4, 0, agent="harness:copilot:m1", condition="guard",
                        contract="keys_everywhere")
    everything = [*minimal, *copilot, *copilot_late, *copilot_guard, *copilot_keys]
    rows = rows_of(tmp_path, everything)
    t8 = table8(rows)
    assert isinstance(t8, Table)
    assert [(r["harness"], r["model"]) for r in t8.rows] == [("minimal", "m1"),
                                                             ("copilot", "m1")]
    native = counted(everything)
    check(t8.rows[1]["dup_lost_ack"], 2, 4, copilot, native, dup)
    check(t8.rows[1]["dup_late_commit"], 2, 2, copilot_late, native, dup)
    check(t8.rows[1]["eos_native"], 2, 6, [*copilot, *copilot_late], native, flag("eos"))
    check(t8.rows[1]["eos_guard"], 4, 4, copilot_guard, native, flag("eos"))
    assert t8.rows[1]["tokens"] == pytest.approx(1200.0)
    assert t8.rows[0]["eos_guard"].n == 0  # type: ignore[union-attr]
    assert t8.rows[0]["tokens"] is None  # no usage recorded: empty, never zero
    t9 = table9(rows)
    assert isinstance(t9, Table)
    assert [c.key for c in t9.columns][2:] == ["native|vanilla", "native|guard",
                                               "keys_everywhere|guard", "eos_keys_guard"]
    scope = [*minimal, *copilot, *copilot_late, *copilot_guard, *copilot_keys]
    check(t9.rows[1]["native|vanilla"], 4, 6, [*copilot, *copilot_late], scope, dup)
    check(t9.rows[1]["keys_everywhere|guard"], 0, 4, copilot_keys, scope, dup)
    assert t9.rows[1]["eos_keys_guard"].k == 4  # type: ignore[union-attr]


def test_tables_8_and_9_skipped_without_harness_agents(tmp_path: Path) -> None:
    rows = rows_of(tmp_path, cell(3, 1, agent="litellm:m1"))
    for result in (table8(rows), table9(rows)):
        assert isinstance(result, Skipped) and "no harness:" in result.reason


# -- Table 10 ------------------------------------------------------------------------------------
def test_table10_cue_ablation_pairs_mcnemar_and_holm(tmp_path: Path) -> None:
    cued = cell(10, 1, agent="litellm:a", templates=("t1", "t2"))
    uncued = cell(10, 8, agent="litellm:a", templates=("t1", "t2"), instruction="no_cue")
    late_cued = cell(4, 4, agent="litellm:a", fault_mode="timeout_late")
    late_uncued = cell(4, 4, agent="litellm:a", fault_mode="timeout_late",
                       instruction="no_cue")
    unpaired = [record(template="t7", instruction="no_cue", agent="litellm:a")]
    everything = [*cued, *uncued, *late_cued, *late_uncued, *unpaired]
    table = table10(rows_of(tmp_path, everything))
    assert isinstance(table, Table)
    assert [(r["faults"], r["pairs"]) for r in table.rows] == [("resolvable", 10),
                                                               ("late_commit", 4)]
    resolvable, late = table.rows
    # Pairs are by index: 1 both duplicated, 7 only without the cue, 0 only with it.
    assert (resolvable["only_default"], resolvable["only_no_cue"]) == (0, 7)
    assert resolvable["p"] == pytest.approx(2 * 0.5 ** 7)
    assert late["p"] == 1.0
    assert resolvable["p_holm"] == pytest.approx(min(1.0, 2 * 2 * 0.5 ** 7))
    assert late["p_holm"] == 1.0
    paired = counted(everything)
    check(resolvable["dup_no_cue"], 8, 10, uncued, paired, dup)
    check(resolvable["dup_default"], 1, 10, cued, paired, dup)


def test_table10_skipped_without_no_cue_or_pairs(tmp_path: Path) -> None:
    result = table10(rows_of(tmp_path, cell(3, 1)))
    assert isinstance(result, Skipped) and "no_cue" in result.reason
    result = table10(rows_of(tmp_path, cell(3, 1, instruction="no_cue")))
    assert isinstance(result, Skipped) and "counterpart" in result.reason


# -- behaviour and overclaim ---------------------------------------------------------------------
def test_behaviour_distribution(tmp_path: Path) -> None:
    records = [*cell(4, 0, behaviour="verify_then_skip"),
               *cell(2, 2, behaviour="blind_retry", first_instance=9),
               *cell(3, 3, fault_mode="timeout_late", behaviour="verify_then_retry"),
               *cell(1, 0, fault_mode="timeout_late", behaviour="escalate", first_instance=9)]
    table = table_behaviour(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    assert [(r["faults"], r["episodes"]) for r in table.rows] == [("resolvable", 6),
                                                                  ("unresolvable", 4)]
    resolvable, unresolvable = table.rows
    assert resolvable["verify_then_skip"] == pytest.approx(4 / 6)
    assert resolvable["blind_retry"] == pytest.approx(2 / 6)
    assert unresolvable["verify_then_retry"] == pytest.approx(3 / 4)
    assert unresolvable["escalate"] == pytest.approx(1 / 4)
    assert "retry_new_key" not in [c.key for c in table.columns]  # absent classes omitted


def test_overclaim_analysis(tmp_path: Path) -> None:
    silent = cell(6, 6, final_status="completed", overclaim=True)
    flagged = cell(2, 2, final_status="completed", overclaim=True,
                   uncertain_operations=["ticket"], first_instance=10)
    honest = cell(2, 2, final_status="partial", first_instance=20)
    clean = cell(5, 0, first_instance=30)
    records = [*silent, *flagged, *honest, *clean]
    table = table_overclaim(rows_of(tmp_path, records))
    assert isinstance(table, Table)
    (row,) = table.rows
    duplicated = records[:10]
    assert row["duplicated"] == 10
    check(row["completed"], 8, 10, duplicated, duplicated,
          lambda r: r.final_status == "completed")
    check(row["completed_no_uncertain"], 6, 10, duplicated, duplicated,
          lambda r: r.final_status == "completed" and not r.uncertain_operations)
    assert isinstance(table_overclaim(rows_of(tmp_path, clean)), Skipped)


# -- writers -------------------------------------------------------------------------------------
def test_writers_agree_on_numbers(tmp_path: Path) -> None:
    table = table3(rows_of(tmp_path, cell(8, 2)))
    assert isinstance(table, Table)
    data = to_json(table)
    dup_cell = data["rows"][0]["dup_lost_ack"]
    assert (dup_cell["k"], dup_cell["n"], dup_cell["rate"]) == (2, 8, 0.25)
    csv_text = to_csv(table).splitlines()
    header = csv_text[0].split(",")
    values = dict(zip(header, csv_text[1].split(","), strict=True))
    assert values["dup_lost_ack"] == "0.25" and values["dup_lost_ack_k"] == "2"
    assert float(values["dup_lost_ack_low"]) == dup_cell["low"]  # both at full precision


def test_every_table_is_a_table_or_a_reason(tmp_path: Path) -> None:
    results = build_tables(rows_of(tmp_path, cell(4, 1)))
    ids = [r.id for r in results]
    assert len(ids) == len(set(ids)) == len(all_tables())
    for result in results:
        if isinstance(result, Skipped):
            assert result.reason and "\n" not in result.reason


# -- H4 ------------------------------------------------------------------------------------------
def test_h4_stakes_irreversible_against_reversible(tmp_path: Path) -> None:
    def episodes(n: int, k: int, irreversible: bool, first: int) -> list[EpisodeRecord]:
        # the first re-issue of each group carries the key again: keyed, not unchecked
        return [record(template=("t1", "t2")[i % 2], instance=first + i,
                       behaviour=("retry_same_key" if i == 0 else "blind_retry") if i < k
                       else "verify_then_skip", focal_irreversible=irreversible)
                for i in range(n)]

    hard, soft = episodes(10, 3, True, 0), episodes(20, 2, False, 100)
    ignored = [record(fault_mode="redelivery", behaviour="blind_retry", focal_irreversible=True),
               # a refund: irreversible, but naturally idempotent: not the paper's irreversible
               record(instance=500, behaviour="blind_retry", focal_irreversible=True,
                      focal_tool="billing_refund_charge",
                      focal_idempotency="naturally_idempotent")]
    table = table_stakes(rows_of(tmp_path, [*hard, *soft, *ignored]))
    assert isinstance(table, Table)
    (row,) = table.rows
    blind = lambda r: r.behaviour == "blind_retry"  # noqa: E731
    keyed = lambda r: r.behaviour in ("retry_same_key", "retry_new_key")  # noqa: E731
    check(row["irreversible"], 2, 10, hard, [*hard, *soft], blind)
    check(row["reversible"], 1, 20, soft, [*hard, *soft], blind)
    check(row["irreversible_keyed"], 1, 10, hard, [*hard, *soft], keyed)
    check(row["reversible_keyed"], 1, 20, soft, [*hard, *soft], keyed)
    expected = tost_independent([True] * 2 + [False] * 8, [True] * 1 + [False] * 19)
    assert row["difference"] == pytest.approx(15.0)
    assert (row["low"], row["high"]) == (pytest.approx(100 * expected.low),
                                         pytest.approx(100 * expected.high))
    assert row["p"] == pytest.approx(expected.pvalue) and row["equivalent"] == "no"
    from scipy.stats import fisher_exact
    assert row["p_difference"] == pytest.approx(fisher_exact([[2, 8], [1, 19]]).pvalue)
    skipped = table_stakes(rows_of(tmp_path, soft))
    assert isinstance(skipped, Skipped) and "irreversible and reversible" in skipped.reason


def test_table3_over_two_experiments_has_an_experiment_column(tmp_path: Path) -> None:
    """E2 beside E4: the same agent and condition in both experiments are two rows, each with
    its own experiment's episodes and the ρ of its own configuration's cells."""
    e2 = cell(12, 6, templates=("t1", "t2", "t3"), experiment="e2")
    e4 = cell(8, 1, templates=("t1", "t2", "t3"), experiment="e4")
    table = table3(rows_of(tmp_path, [*e2, *e4]))
    assert isinstance(table, Table)
    assert [c.key for c in table.columns][:2] == ["agent", "experiment"]
    dup = lambda r: r.duplicates > 0  # noqa: E731
    for experiment, members, k in (("e2", e2, 6), ("e4", e4, 1)):
        row = table.find(agent="scripted:alpha", experiment=experiment)
        check(row["dup_lost_ack"], k, len(members), members, [*e2, *e4], dup)
