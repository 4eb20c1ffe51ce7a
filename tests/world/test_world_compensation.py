"""Compensation marks the ledger effect undone and never removes it (SPEC §1.2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from worldkit import assert_ledger_consistent, make_box, write_args

from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry


def _refund(box: Sandbox, body: dict[str, Any]) -> dict[str, Any]:
    return {"charge_id": body["id"]}


def _delete_post(platform: str) -> Callable[[Sandbox, dict[str, Any]], dict[str, Any]]:
    return lambda box, body: {"platform": platform, "post_id": body["id"]}


CASES: list[tuple[str, str, Callable[[Sandbox, dict[str, Any]], dict[str, Any]]]] = [
    ("billing_create_charge", "billing_refund_charge", _refund),
    ("mastodon_publish", "social_delete_post", _delete_post("mastodon")),
    ("weibo_publish", "social_delete_post", _delete_post("weibo")),
    ("linkedin_publish", "social_delete_post", _delete_post("linkedin")),
    ("x_publish", "social_delete_post", _delete_post("x")),
    ("deploy_trigger", "deploy_cancel_run", lambda box, body: {"run_id": body["id"]}),
    ("tickets_create", "tickets_set_status",
     lambda box, body: {"ticket_id": body["id"], "status": "cancelled"}),
    ("db_insert_row", "db_delete_rows",
     lambda box, body: {"table": "audit_log", "ids": [body["id"]]}),
]


@pytest.mark.parametrize(("write", "undo", "undo_args"), CASES, ids=[c[0] for c in CASES])
def test_compensation_marks_the_effect_undone(
        registry: SpecRegistry, write: str, undo: str,
        undo_args: Callable[[Sandbox, dict[str, Any]], dict[str, Any]]) -> None:
    """The write's effect stays in the ledger with ``undone_at`` set to the compensation time;
    a second compensation changes nothing."""
    box = make_box(registry)
    body = box.call(write, write_args(write)).content
    box.call("wait", {"seconds": 50})
    original = box.ledger.effects[0]
    assert original.undone_at is None
    t_undo = box.now
    result = box.call(undo, undo_args(box, body))
    assert not result.is_error, result.text()
    assert box.ledger.effects[0] is original
    assert original.tool == write and original.record_ids == [body["id"]]
    assert original.undone_at == t_undo
    assert len(box.ledger.effects) == 2
    assert box.ledger.effects[1].tool == undo and box.ledger.effects[1].kind == "update"
    box.call(undo, undo_args(box, body))
    assert len(box.ledger.effects) == 2 and original.undone_at == t_undo
    assert_ledger_consistent(box.ledger, box.now)


def test_delete_rows_undoes_each_row_of_a_batch(registry: SpecRegistry) -> None:
    """Deleting some rows of a batch marks exactly those rows' effects undone."""
    box = make_box(registry)
    ids = box.call("db_insert_rows", write_args("db_insert_rows")).content["ids"]
    box.call("db_delete_rows", {"table": "migrations", "ids": [ids[1], ids[3]]})
    undone = [e.undone_at is not None for e in box.ledger.effects[:4]]
    assert undone == [False, True, False, True]
    assert len(box.ledger.effects) == 5


def test_refund_of_a_seeded_charge_touches_no_agent_effect(registry: SpecRegistry) -> None:
    """Refunding a pre-existing charge records the refund without undoing any other effect."""
    box = make_box(registry)
    charge = box.call("billing_create_charge", write_args("billing_create_charge")).content
    box.call("billing_refund_charge", {"charge_id": "ch_seed_dup"})
    first, refund = box.ledger.effects
    assert first.record_ids == [charge["id"]] and first.undone_at is None
    assert refund.targets == ["ch_seed_dup"]


def test_other_status_changes_do_not_undo_a_ticket(registry: SpecRegistry) -> None:
    """Only cancelling compensates a ticket; resolving it does not."""
    box = make_box(registry)
    ticket = box.call("tickets_create", write_args("tickets_create")).content
    box.call("tickets_set_status", {"ticket_id": ticket["id"], "status": "resolved"})
    assert box.ledger.effects[0].undone_at is None


def test_undone_effects_still_count_as_committed(registry: SpecRegistry) -> None:
    """A refunded double charge was still charged: both creations stay in the ledger."""
    box = make_box(registry)
    first = box.call("billing_create_charge", write_args("billing_create_charge")).content
    box.call("billing_create_charge", write_args("billing_create_charge"))
    box.call("billing_refund_charge", {"charge_id": first["id"]})
    charges = [e for e in box.ledger.effects if e.tool == "billing_create_charge"]
    assert len(charges) == 2
    assert [e.undone_at is not None for e in charges] == [True, False]


def test_a_later_write_of_another_value_supersedes_an_update(registry: SpecRegistry) -> None:
    """resolved → in_progress: the first status change no longer stands, and says which effect
    superseded it; the second stands. Nothing is removed."""
    box = make_box(registry)
    box.call("tickets_set_status", {"ticket_id": "OPS-1001", "status": "resolved"})
    box.call("wait", {"seconds": 10})
    box.call("tickets_set_status", {"ticket_id": "OPS-1001", "status": "in_progress"})
    resolved, reopened = box.ledger.effects
    assert resolved.sets == {"status": "resolved"}
    assert (resolved.undone_at, resolved.undone_by) == (box.now - 1, reopened.seq)
    assert reopened.undone_at is None
    assert_ledger_consistent(box.ledger, box.now)


def test_an_upsert_is_superseded_only_by_a_different_value_of_a_field_it_set(
        registry: SpecRegistry) -> None:
    box = make_box(registry)

    def upsert(values: dict[str, Any]) -> None:
        box.call("db_upsert", {"table": "feature_flags", "key": {"flag": "dark_mode"},
                               "values": values})

    upsert({"enabled": True})
    upsert({"enabled": True, "cohort": "beta"})  # enabled unchanged: the first still stands
    first, second = box.ledger.effects
    assert first.undone_at is None and second.sets == {"enabled": True, "cohort": "beta"}
    upsert({"enabled": True})  # no change at all: no effect
    assert len(box.ledger.effects) == 2
    upsert({"cohort": "everyone"})  # changes the cohort the second one set
    assert first.undone_at is None and second.undone_by == 3
    upsert({"enabled": False})
    assert first.undone_by == 4 and box.ledger.effects[2].undone_at is None


def test_deleting_a_row_undoes_the_upserts_that_wrote_it(registry: SpecRegistry) -> None:
    box = make_box(registry)
    box.call("db_upsert", {"table": "feature_flags", "key": {"flag": "live_chat"},
                           "values": {"enabled": True}})
    box.call("db_delete_rows", {"table": "feature_flags", "ids": ["row_seed_f2"]})
    upsert, delete = box.ledger.effects
    assert upsert.undone_by == delete.seq and delete.undone_at is None


def test_cancelling_a_ticket_undoes_its_creation_but_not_the_cancellation(
        registry: SpecRegistry) -> None:
    box = make_box(registry)
    ticket = box.call("tickets_create", write_args("tickets_create")).content
    box.call("tickets_set_status", {"ticket_id": ticket["id"], "status": "cancelled"})
    created, cancelled = box.ledger.effects
    assert created.undone_by == cancelled.seq and cancelled.undone_at is None
