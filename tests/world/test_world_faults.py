"""The twelve fault modes of SPEC §3: hidden outcomes, what the agent sees, and the trigger."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest
from scipy import stats
from worldkit import (
    HTTP500_BODY,
    MIGRATION_ROWS,
    MODE_TABLE,
    TIMEOUT_BODY,
    WRITE_CALLS,
    effects_of,
    make_box,
    write_args,
)

from limbo_plugin.faults import EXECUTORS, FaultPlan, executors
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.models import FocalTrigger
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.seeds import world_seed

T_SENT = 5
"""The focal write is sent at t = 5 s, so 't_sent + Δ' and 'Δ' differ."""

CASES = [(mode, tool) for mode in MODE_TABLE for tool in WRITE_CALLS
         if mode != "partial_batch" or tool == "db_insert_rows"]


def _rows_of(tool: str) -> int:
    return len(MIGRATION_ROWS) if tool == "db_insert_rows" else 1


def _send_focal(box: Sandbox, tool: str) -> Any:
    box.call("wait", {"seconds": T_SENT})
    return box.call(tool, write_args(tool))


def test_fault_catalog_matches_the_spec(registry: SpecRegistry) -> None:
    """modes.yaml declares the twelve modes of SPEC §3 (plus none) with their group, family,
    hidden outcome, response and cost (a mode added to the specs comes on top)."""
    assert {*MODE_TABLE, "none"} <= set(registry.faults)
    for name, (group, family, hidden) in MODE_TABLE.items():
        mode = registry.fault_mode(name)
        assert (mode.group, mode.family, mode.hidden_outcome) == (group, family, hidden), name
        if group == "T":
            assert mode.response == TIMEOUT_BODY and mode.cost_s == 30
        if group == "E":
            assert mode.response == HTTP500_BODY and mode.cost_s == 1
    assert registry.fault_mode("http503").response == {"error": {
        "type": "http", "status": 503, "message": "Service Unavailable", "retry_after_s": 10}}
    http429 = registry.fault_mode("http429").response
    assert http429 is not None and http429["error"]["retry_after_s"] == 20
    assert registry.fault_mode("outage").outage_window_s == 300
    assert registry.fault_mode("timeout_late").late_delay_s == 90
    assert registry.fault_mode("timeout_late_tail").late_delay_range_s == (40, 7200)
    spec_families = ("not_executed", "lost_ack", "misleading_500", "partial_batch",
                     "late_commit", "redelivery", "explicit", "none")
    classes = {family: registry.fault_class(family) for family in spec_families}
    assert {f for f, c in classes.items() if c == "resolvable"} == {
        "lost_ack", "misleading_500", "partial_batch"}
    assert {f for f, c in classes.items() if c == "unresolvable"} == {"late_commit", "redelivery"}
    assert [f for f in registry.family_order if f in spec_families] == list(spec_families)
    assert [m for m, spec in registry.faults.items()
            if spec.exactly_once_needs_key and m in MODE_TABLE] == ["redelivery"]


def test_every_execution_kind_has_one_executor(registry: SpecRegistry) -> None:
    """A mode's ``execute`` kind is checked against the declared executors when the specs load
    (a typo is a spec error, not a failure at the first firing)."""
    kinds = [executor.kind for executor in EXECUTORS]
    assert len(set(kinds)) == len(kinds) and set(executors()) >= set(kinds)
    assert {mode.execute for mode in registry.faults.values()} <= set(executors())


@pytest.mark.parametrize(("mode", "tool"), CASES, ids=[f"{m}-{t}" for m, t in CASES])
def test_hidden_outcome_shows_in_the_ledger(registry: SpecRegistry, mode: str, tool: str) -> None:
    """Each mode leaves the ledger in its hidden outcome of SPEC §3."""
    box = make_box(registry, mode=mode, tool=tool)
    _send_focal(box, tool)
    hidden = MODE_TABLE[mode][2]
    rows = _rows_of(tool)
    report = box.transport.report
    assert report.fired and report.t_fired == T_SENT
    if hidden == "late":
        assert effects_of(box, tool) == []
        assert box.world.requests[0].fate == "in_flight"
    box.call("wait", {"seconds": 30})
    box.world.finish_in_flight()
    effects = effects_of(box, tool)
    if hidden == "absent":
        assert effects == []
        assert box.world.requests[0].fate == "not_executed"
    elif hidden == "committed":
        assert len(effects) == rows
        assert all(e.t == T_SENT and e.origin == "agent" for e in effects)
    elif hidden == "late":
        assert len(effects) == rows and report.delay_s is not None
        assert all(e.t == T_SENT + report.delay_s and e.origin == "late" for e in effects)
    elif hidden == "partial":
        assert 1 <= len(effects) <= rows - 1
        assert [e.intent["row"] for e in effects] == MIGRATION_ROWS[:len(effects)]
    else:
        assert hidden == "duplicated"
        assert len(effects) == 2 * rows
        assert [e.origin for e in effects] == ["agent"] * rows + ["redelivery"] * rows
        assert [e.t for e in effects] == [T_SENT] * rows + [T_SENT + 2] * rows
        assert [e.intent for e in effects[:rows]] == [e.intent for e in effects[rows:]]
    assert len(box.world.requests) == 1  # the transport re-sends; the agent sent once


@pytest.mark.parametrize("tool", list(WRITE_CALLS))
def test_what_the_agent_sees(registry: SpecRegistry, tool: str) -> None:
    """Per mode: the response body and the clock advance of SPEC §3."""
    clean = make_box(registry)
    normal = _send_focal(clean, tool)
    assert not normal.is_error
    for mode, (group, _, _) in MODE_TABLE.items():
        if mode == "partial_batch" and tool != "db_insert_rows":
            continue
        box = make_box(registry, mode=mode, tool=tool)
        result = _send_focal(box, tool)
        elapsed = box.now - T_SENT
        if group == "T":
            assert result.content == TIMEOUT_BODY and result.is_error and elapsed == 30
        elif group == "E":
            assert result.content == HTTP500_BODY and result.is_error and elapsed == 1
        elif mode == "redelivery":
            assert result.text() == normal.text() and not result.is_error and elapsed == 1
        elif mode in ("http503", "http429", "outage"):
            assert result.is_error and result.is_explicit_refusal and elapsed == 1
            assert result.status == (429 if mode == "http429" else 503)
        else:
            assert mode == "schema_drift"
            assert not result.is_error and elapsed == 1
            noun = registry.catalog().contract(tool).record_noun.replace(" ", "_")
            assert result.content == {"object": noun, "data": normal.content,
                                      "api_version": "2026-09-01"}


# -- the trigger -------------------------------------------------------------------------------
REJECTED: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "schema_error": ("billing_create_charge",
                     {**WRITE_CALLS["billing_create_charge"], "amount_cents": "25"},
                     {"type": "http", "status": 400}),
    "missing_argument": ("tickets_create", {"project": "OPS", "title": "t"},
                         {"type": "http", "status": 400}),
    "unknown_customer": ("billing_create_charge",
                         {**WRITE_CALLS["billing_create_charge"], "customer_id": "cus_nope"},
                         {"status": 404}),
    "unknown_ticket": ("tickets_add_comment", {"ticket_id": "OPS-9", "body": "hi"},
                       {"status": 404}),
    "unknown_table": ("db_insert_rows", {"table": "nope", "rows": MIGRATION_ROWS},
                      {"status": 404}),
    "unknown_column": ("db_insert_rows", {"table": "migrations", "rows": [{"colour": "red"}]},
                       {"status": 400}),
}


@pytest.mark.parametrize("kind", list(REJECTED))
@pytest.mark.parametrize("mode", ["timeout_post", "http500_pre", "redelivery", "outage",
                                  "schema_drift"])
def test_trigger_stays_armed_after_a_rejected_request(
        registry: SpecRegistry, mode: str, kind: str) -> None:
    """A request the service rejects anyway gets its real error at the normal cost, and the
    fault fires on the next valid matching call."""
    tool, bad_args, expected = REJECTED[kind]
    box = make_box(registry, mode=mode, tool=tool)
    rejected = box.call(tool, bad_args)
    assert rejected.is_error and box.now == 1
    assert expected.items() <= (rejected.error or {}).items()
    assert not box.transport.fired and box.ledger.effects == []
    box.call(tool, write_args(tool))
    report = box.transport.report
    assert report.fired and report.request_seq == 2 and report.t_fired == 1


def test_trigger_stays_armed_after_key_reuse(registry: SpecRegistry) -> None:
    """A key-reuse conflict is a real rejection too: the fault waits for a valid call."""
    box = make_box(registry, mode="http500_post", tool="billing_create_charge",
                   where={"customer_id": "cus_initech"})
    keyed = {**write_args("billing_create_charge"), "idempotency_key": "k"}
    assert not box.call("billing_create_charge", keyed).is_error  # cus_globex: not matching
    conflict = box.call("billing_create_charge", {**keyed, "customer_id": "cus_initech"})
    assert conflict.error is not None and conflict.error["code"] == "idempotency_key_reused"
    assert not box.transport.fired
    fired = box.call("billing_create_charge",
                     {**keyed, "customer_id": "cus_initech", "idempotency_key": "k2"})
    assert fired.content == HTTP500_BODY and box.transport.fired
    assert len(box.ledger.effects) == 2


@pytest.mark.parametrize("n", [1, 2, 3])
def test_fault_fires_on_the_nth_matching_call_only(registry: SpecRegistry, n: int) -> None:
    """With n = k the k-th valid matching call is faulted; calls that do not match the filter,
    or come after the fault, are untouched."""
    box = make_box(registry, mode="timeout_pre", tool="email_send",
                   where={"to": "oncall@acme.example"}, n=n)
    outcomes = []
    for _ in range(4):
        box.call("email_send", {**write_args("email_send"), "to": "other@acme.example"})
        outcomes.append(box.call("email_send", write_args("email_send")).error_type)
    assert outcomes == ["timeout" if i == n - 1 else None for i in range(4)]
    assert len(box.ledger.effects) == 7
    assert box.transport.report.request_seq == 2 * n


def test_plan_without_trigger_never_fires(registry: SpecRegistry) -> None:
    """A plan whose trigger is None is the fault-free world."""
    box = make_box(registry, mode="timeout_pre", tool=None)
    assert not box.call("email_send", write_args("email_send")).is_error
    assert not box.transport.fired


# -- late commits ------------------------------------------------------------------------------
def test_late_commit_lands_at_t_sent_plus_90(registry: SpecRegistry) -> None:
    """timeout_late: the effect commits at t_sent + 90 s whatever the agent does meanwhile."""
    box = make_box(registry, mode="timeout_late", tool="weibo_publish")
    _send_focal(box, "weibo_publish")
    box.call("weibo_list_posts", {})
    box.call("wait", {"seconds": 50})
    assert box.now == T_SENT + 81 and box.ledger.effects == []
    box.call("wait", {"seconds": 20})
    [effect] = box.ledger.effects
    assert effect.t == T_SENT + 90 and effect.origin == "late"
    assert box.transport.report.commit_at == T_SENT + 90


def test_late_commit_lands_at_episode_end_if_the_agent_stops_early(
        registry: SpecRegistry) -> None:
    """If the agent finishes before the commit, finish_in_flight lands it at its own time."""
    box = make_box(registry, mode="timeout_late", tool="email_send")
    _send_focal(box, "email_send")
    box.call("finish", {"status": "failed", "summary": "timed out"})
    assert box.ledger.effects == []
    box.world.finish_in_flight()
    [effect] = box.ledger.effects
    assert effect.t == T_SENT + 90 and box.now == T_SENT + 90
    assert box.world.requests[0].fate == "committed"


def test_tail_delay_is_log_uniform_with_a_nine_minute_median(registry: SpecRegistry) -> None:
    """δ ~ LogUniform(40 s, 7200 s): over many world seeds log δ is uniform (KS test), the
    median is about 9 minutes, and every draw stays in range."""
    mode = registry.fault_mode("timeout_late_tail")
    seeds = [world_seed("tmpl", i, "focal", "timeout_late_tail") for i in range(3000)]
    delays = [FaultPlan(mode, FocalTrigger("x"), s).late_delay() for s in seeds]
    assert min(delays) >= 40 and max(delays) <= 7200
    low, high = math.log(40), math.log(7200)
    result = stats.kstest([math.log(d) for d in delays], "uniform", args=(low, high - low))
    assert result.pvalue > 0.001, result
    median = statistics.median(delays)
    assert abs(median - math.sqrt(40 * 7200)) < 60, median  # ≈ 537 s ≈ 9 min
    assert 8 * 60 < median < 10 * 60
    assert sum(d < 60 for d in delays) > 100 and sum(d > 3600 for d in delays) > 300


def test_tail_delay_is_deterministic_per_world_seed(registry: SpecRegistry) -> None:
    """The same world seed always draws the same δ, and the world commits exactly then."""
    mode = registry.fault_mode("timeout_late_tail")
    first = [FaultPlan(mode, FocalTrigger("x"), s).late_delay() for s in range(20)]
    assert first == [FaultPlan(mode, FocalTrigger("y"), s).late_delay() for s in range(20)]
    assert len(set(first)) == 20
    for seed in (3, 4):
        box = make_box(registry, mode="timeout_late_tail", tool="x_publish", world_seed=seed)
        _send_focal(box, "x_publish")
        box.world.finish_in_flight()
        assert box.ledger.effects[0].t == T_SENT + first[seed]


# -- partial batches ---------------------------------------------------------------------------
def test_partial_batch_commits_k_of_n_rows(registry: SpecRegistry) -> None:
    """k ∈ [1, n − 1], drawn from the world seed; over many seeds every k in range occurs."""
    mode = registry.fault_mode("partial_batch")
    for n in (2, 3, 4, 7):
        ks = {FaultPlan(mode, FocalTrigger("x"), s).partial_rows(n) for s in range(300)}
        assert ks == set(range(1, n)), (n, ks)
    seen = set()
    for seed in range(12):
        box = make_box(registry, mode="partial_batch", tool="db_insert_rows", world_seed=seed)
        box.call("db_insert_rows", write_args("db_insert_rows"))
        k = len(box.ledger.effects)
        assert k == FaultPlan(mode, FocalTrigger("x"), seed).partial_rows(4)
        assert box.world.requests[0].rows_done == k
        seen.add(k)
    assert len(seen) > 1


def test_partial_batch_rows_are_visible_to_a_query(registry: SpecRegistry) -> None:
    """The committed prefix is real state: the strong read-back shows exactly those rows."""
    box = make_box(registry, mode="partial_batch", tool="db_insert_rows")
    box.call("db_insert_rows", write_args("db_insert_rows"))
    rows = box.call("db_query", {"table": "migrations", "where": {"applied_on": "2026-09-15"}})
    assert [r["id"] for r in rows.content["rows"]] == [e.record_ids[0]
                                                       for e in box.ledger.effects]


# -- redelivery --------------------------------------------------------------------------------
def test_redelivery_duplicates_without_a_key(registry: SpecRegistry) -> None:
    """The transport delivers the request again 2 s later: a second record, a new id."""
    box = make_box(registry, mode="redelivery", tool="tickets_create")
    first = _send_focal(box, "tickets_create")
    box.call("wait", {"seconds": 5})
    listed = box.call("tickets_list", {"project": "OPS"}).content["tickets"]
    created = [e.record_ids[0] for e in box.ledger.effects]
    assert created[0] == first.content["id"] and created[1] != created[0]
    assert [t["id"] for t in listed[:2]] == created[::-1]
    assert box.world.requests[0].redelivered_ids == [created[1]]


# -- explicit refusals -------------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "retry_after"), [("http503", 10), ("http429", 20)])
def test_explicit_refusal_did_not_execute_and_a_resend_works(
        registry: SpecRegistry, mode: str, retry_after: int) -> None:
    """429/503 carry retry_after_s; nothing executed, and the re-send after it succeeds."""
    box = make_box(registry, mode=mode, tool="deploy_trigger")
    refused = box.call("deploy_trigger", write_args("deploy_trigger"))
    assert refused.retry_after_s == retry_after and not refused.is_ambiguous
    box.call("wait", {"seconds": retry_after})
    assert not box.call("deploy_trigger", write_args("deploy_trigger")).is_error
    assert len(box.ledger.effects) == 1


def test_outage_blocks_the_whole_service_for_300_s(registry: SpecRegistry) -> None:
    """Every call to the service, reads too, gets 503 for 300 s; other services work; then the
    service recovers."""
    box = make_box(registry, mode="outage", tool="tickets_create")
    _send_focal(box, "tickets_create")
    blocked = [
        box.call("tickets_list", {"project": "OPS"}),
        box.call("tickets_get", {"ticket_id": "OPS-1001"}),
        box.call("tickets_add_comment", write_args("tickets_add_comment")),
        box.call("tickets_create", write_args("tickets_create")),
    ]
    assert all(r.status == 503 and r.error is not None
               and r.error["message"] == "service unavailable" for r in blocked)
    assert not box.call("email_send", write_args("email_send")).is_error
    box.call("wait", {"seconds": T_SENT + 300 - int(box.now) - 1})
    assert box.now == T_SENT + 299
    assert box.call("tickets_list", {"project": "OPS"}).status == 503
    assert box.now == T_SENT + 300
    assert not box.call("tickets_list", {"project": "OPS"}).is_error
    assert not box.call("tickets_create", write_args("tickets_create")).is_error
    assert [e.tool for e in box.ledger.effects] == ["email_send", "tickets_create"]


def test_schema_drift_commits(registry: SpecRegistry) -> None:
    """The drifted body is a success: the write committed once and reads show it."""
    box = make_box(registry, mode="schema_drift", tool="billing_create_charge")
    drifted = box.call("billing_create_charge", write_args("billing_create_charge"))
    charge_id = drifted.content["data"]["id"]
    assert [e.record_ids for e in box.ledger.effects] == [[charge_id]]
    listed = box.call("billing_list_charges", {"customer_id": "cus_globex"}).content
    assert listed["charges"][0]["id"] == charge_id
    normal = box.call("billing_create_charge", write_args("billing_create_charge"))
    assert "api_version" not in normal.content  # only the faulted call drifts
