"""escalate_to_human: after 900 s the operator answers truthfully from the ground truth
(SPEC §4.3); the unresponsive variant never answers."""

from __future__ import annotations

from typing import Any

from worldkit import make_box, write_args

from limbo_plugin.faults import FaultPlan
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.models import FocalTrigger
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.operator import NO_RESPONSE


def _escalate(box: Sandbox) -> dict[str, Any]:
    before = box.now
    result = box.call("escalate_to_human", {"message": "Did my last write go through?"})
    assert not result.is_error
    assert box.now == before + 900
    return result.content


def _only_operation(answer: dict[str, Any]) -> dict[str, Any]:
    assert len(answer["operations"]) == 1, answer
    return answer["operations"][0]


def test_committed_write_is_reported_with_its_ids(registry: SpecRegistry) -> None:
    """After a lost acknowledgement the operator says it committed, naming the record ids."""
    box = make_box(registry, mode="timeout_post", tool="tickets_create")
    box.call("tickets_create", write_args("tickets_create"))
    op = _only_operation(answer := _escalate(box))
    ticket_id = box.ledger.effects[0].record_ids[0]
    assert op["outcome"] == "committed" and op["record_ids"] == [ticket_id]
    assert op["records"][0]["title"] == write_args("tickets_create")["title"]
    assert ticket_id in answer["answer"]
    assert op["tool"] == "tickets_create" and op["arguments"] == write_args("tickets_create")


def test_lost_request_is_reported_not_executed(registry: SpecRegistry) -> None:
    """After a request lost before the service the operator says nothing changed."""
    for mode in ("timeout_pre", "http500_pre"):
        box = make_box(registry, mode=mode, tool="email_send")
        box.call("email_send", write_args("email_send"))
        op = _only_operation(_escalate(box))
        assert op["outcome"] == "not_executed" and op["record_ids"] == []
        assert box.ledger.effects == []


def test_partial_batch_is_reported_with_the_rows_done(registry: SpecRegistry) -> None:
    """After a partial batch the operator names the rows that were inserted."""
    box = make_box(registry, mode="partial_batch", tool="db_insert_rows")
    box.call("db_insert_rows", write_args("db_insert_rows"))
    op = _only_operation(answer := _escalate(box))
    ids = [e.record_ids[0] for e in box.ledger.effects]
    assert op["outcome"] == "partially_executed"
    assert op["rows_done"] == len(ids) and op["record_ids"] == ids
    assert f"rows 1-{len(ids)} of 4" in answer["answer"]


def _tail_seed(registry: SpecRegistry, minimum: float) -> int:
    """A world seed whose tail delay exceeds ``minimum`` seconds."""
    mode = registry.fault_mode("timeout_late_tail")
    for seed in range(10_000):
        if FaultPlan(mode, FocalTrigger("x"), seed).late_delay() > minimum:
            return seed
    raise AssertionError("no world seed with a long enough tail delay")


def test_request_still_in_flight_is_reported_as_such(registry: SpecRegistry) -> None:
    """A late commit that has not landed by the answer is reported in flight; it then lands."""
    seed = _tail_seed(registry, 2000)
    box = make_box(registry, mode="timeout_late_tail", tool="deploy_trigger", world_seed=seed)
    box.call("deploy_trigger", write_args("deploy_trigger"))
    op = _only_operation(_escalate(box))
    assert op["outcome"] == "in_flight" and box.ledger.effects == []
    box.world.finish_in_flight()
    assert [e.origin for e in box.ledger.effects] == ["late"]


def test_late_commit_that_landed_during_the_wait_is_reported_committed(
        registry: SpecRegistry) -> None:
    """The operator answers at t + 900, so a 90 s late commit has landed by then."""
    box = make_box(registry, mode="timeout_late", tool="billing_create_charge")
    box.call("billing_create_charge", write_args("billing_create_charge"))
    op = _only_operation(_escalate(box))
    assert op["outcome"] == "committed"
    assert op["record_ids"] == box.ledger.effects[0].record_ids


def test_only_failed_writes_are_reported(registry: SpecRegistry) -> None:
    """Successful writes and reads are not listed; a rejected write is 'not executed'."""
    box = make_box(registry)
    box.call("mastodon_publish", write_args("mastodon_publish"))
    box.call("mastodon_list_posts", {})
    assert _escalate(box)["operations"] == []
    box.call("tickets_add_comment", {"ticket_id": "OPS-404", "body": "hello"})
    op = _only_operation(_escalate(box))
    assert op["tool"] == "tickets_add_comment" and op["outcome"] == "not_executed"


def test_unresponsive_operator_never_answers(registry: SpecRegistry) -> None:
    """The unresponsive variant costs the same 900 s and reveals nothing."""
    box = make_box(registry, mode="timeout_post", tool="email_send", operator="unresponsive")
    box.call("email_send", write_args("email_send"))
    answer = _escalate(box)
    assert answer["answer"] == NO_RESPONSE and answer["operations"] == []
    assert len(box.ledger.effects) == 1
