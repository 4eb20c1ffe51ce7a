"""Idempotency keys with Stripe semantics (SPEC §2.1): replay, conflict, batch resumption and
execution-time deduplication."""

from __future__ import annotations

import pytest
from worldkit import MIGRATION_ROWS, effects_of, make_box, write_args

from limbo_plugin.spec.registry import SpecRegistry

NON_IDEMPOTENT = ["billing_create_charge", "mastodon_publish", "weibo_publish",
                  "linkedin_publish", "x_publish", "tickets_create", "tickets_add_comment",
                  "email_send", "db_insert_rows", "db_insert_row", "deploy_trigger"]
CHANGE: dict[str, dict[str, object]] = {
    "billing_create_charge": {"amount_cents": 2600},
    "mastodon_publish": {"text": "Something else entirely"},
    "weibo_publish": {"text": "Something else entirely"},
    "linkedin_publish": {"text": "Something else entirely"},
    "x_publish": {"text": "Something else entirely"},
    "tickets_create": {"title": "Another ticket"},
    "tickets_add_comment": {"body": "Another comment"},
    "email_send": {"subject": "Another subject"},
    "db_insert_rows": {"rows": MIGRATION_ROWS[:2]},
    "db_insert_row": {"row": {"action": "other"}},
    "deploy_trigger": {"version": "9.9.9"},
}
"""A change of parameters for each write: same key, different request."""


def keyed(tool: str, key: str = "key-1", **change: object) -> dict[str, object]:
    return {**write_args(tool), **change, "idempotency_key": key}


def _contract_for(tool: str) -> str:
    return "native" if tool in ("billing_create_charge", "mastodon_publish") else "keys_everywhere"


@pytest.mark.parametrize("tool", NON_IDEMPOTENT)
def test_same_key_same_parameters_replays(registry: SpecRegistry, tool: str) -> None:
    """A repeat with the same key and parameters has no new effect and replays the response."""
    box = make_box(registry, contract=_contract_for(tool))
    first = box.call(tool, keyed(tool))
    n_effects = len(box.ledger.effects)
    box.call("wait", {"seconds": 30})
    second = box.call(tool, keyed(tool))
    assert not first.is_error and second.text() == first.text()
    assert len(box.ledger.effects) == n_effects >= 1
    assert all(e.key == "key-1" for e in box.ledger.effects)
    third = box.call(tool, keyed(tool, key="key-2"))
    assert not third.is_error and third.text() != first.text()
    assert len(box.ledger.effects) > n_effects


@pytest.mark.parametrize("tool", NON_IDEMPOTENT)
def test_same_key_different_parameters_is_rejected(registry: SpecRegistry, tool: str) -> None:
    """Same key, different parameters: 400 idempotency_key_reused and no effect."""
    box = make_box(registry, contract=_contract_for(tool))
    first = box.call(tool, keyed(tool))
    before = box.ledger.to_json()
    conflict = box.call(tool, {**keyed(tool), **CHANGE[tool]})
    assert conflict.is_error and conflict.status == 400
    assert conflict.error is not None and conflict.error["code"] == "idempotency_key_reused"
    assert box.ledger.to_json() == before
    assert box.call(tool, keyed(tool)).text() == first.text()  # the original still replays


def test_native_contract_rejects_keys_on_keyless_writes(registry: SpecRegistry) -> None:
    """Under the native contract only billing and mastodon accept a key (SPEC §2)."""
    box = make_box(registry)
    result = box.call("weibo_publish", keyed("weibo_publish"))
    assert result.status == 400 and box.ledger.effects == []
    assert not box.call("mastodon_publish", keyed("mastodon_publish")).is_error


def test_keys_are_scoped_to_a_service(registry: SpecRegistry) -> None:
    """One key string on two services names two different requests."""
    box = make_box(registry, contract="keys_everywhere")
    assert not box.call("email_send", keyed("email_send", key="same")).is_error
    assert not box.call("weibo_publish", keyed("weibo_publish", key="same")).is_error
    assert len(box.ledger.effects) == 2


def test_keys_last_the_whole_episode(registry: SpecRegistry) -> None:
    """A key replays hours later: keys are kept for the whole episode."""
    box = make_box(registry)
    first = box.call("billing_create_charge", keyed("billing_create_charge"))
    for _ in range(3):
        box.call("wait", {"seconds": 3600})
    assert box.call("billing_create_charge", keyed("billing_create_charge")).text() == first.text()
    assert len(box.ledger.effects) == 1


# -- batch resumption --------------------------------------------------------------------------
def test_interrupted_batch_resumes_under_its_key(registry: SpecRegistry) -> None:
    """After a partial batch, a re-issue with the same key inserts only the missing rows and
    answers as if the whole batch succeeded once; a further re-issue replays."""
    box = make_box(registry, contract="keys_everywhere", mode="partial_batch",
                   tool="db_insert_rows")
    args = keyed("db_insert_rows")
    assert box.call("db_insert_rows", args).status == 500
    k = len(box.ledger.effects)
    assert 1 <= k <= 3
    first_ids = [e.record_ids[0] for e in box.ledger.effects]
    resumed = box.call("db_insert_rows", args)
    assert not resumed.is_error
    effects = box.ledger.effects
    assert len(effects) == 4
    assert [e.origin for e in effects] == ["agent"] * k + ["batch_resume"] * (4 - k)
    assert [e.intent["row"] for e in effects] == MIGRATION_ROWS
    assert resumed.content["inserted"] == 4
    assert resumed.content["ids"] == [e.record_ids[0] for e in effects]
    assert resumed.content["ids"][:k] == first_ids
    again = box.call("db_insert_rows", args)
    assert again.text() == resumed.text() and len(box.ledger.effects) == 4
    rows = box.call("db_query", {"table": "migrations", "where": {"applied_on": "2026-09-15"}})
    assert [r["name"] for r in rows.content["rows"]] == [r["name"] for r in MIGRATION_ROWS]


def test_interrupted_batch_without_its_key_inserts_everything_again(
        registry: SpecRegistry) -> None:
    """Without the key (or with a new one) the re-issue is a new batch: the k rows duplicate."""
    box = make_box(registry, contract="keys_everywhere", mode="partial_batch",
                   tool="db_insert_rows")
    box.call("db_insert_rows", keyed("db_insert_rows"))
    k = len(box.ledger.effects)
    assert not box.call("db_insert_rows", keyed("db_insert_rows", key="key-2")).is_error
    assert len(box.ledger.effects) == k + 4


# -- execution-time deduplication --------------------------------------------------------------
@pytest.mark.parametrize("tool", ["billing_create_charge", "mastodon_publish"])
def test_reissue_before_the_late_original_wins_and_the_original_replays(
        registry: SpecRegistry, tool: str) -> None:
    """The key is checked when a request executes: a re-issue that executes before the in-flight
    original has the effect, and the late original is absorbed."""
    box = make_box(registry, mode="timeout_late", tool=tool)
    assert box.call(tool, keyed(tool)).error_type == "timeout"
    reissue = box.call(tool, keyed(tool))  # at t = 30, before the original lands at 90
    assert not reissue.is_error
    box.call("wait", {"seconds": 300})
    box.world.finish_in_flight()
    effects = effects_of(box, tool)
    assert len(effects) == 1 and effects[0].origin == "agent" and effects[0].t == 30
    assert effects[0].record_ids == [reissue.content["id"]]
    original = box.world.requests[0]
    assert original.fate == "replayed" and original.record_ids == [reissue.content["id"]]


@pytest.mark.parametrize("tool", ["billing_create_charge", "mastodon_publish"])
def test_reissue_after_the_late_original_replays_it(registry: SpecRegistry, tool: str) -> None:
    """When the in-flight original executes first, the re-issue replays its response."""
    box = make_box(registry, mode="timeout_late", tool=tool)
    box.call(tool, keyed(tool))
    box.call("wait", {"seconds": 100})
    reissue = box.call(tool, keyed(tool))
    effects = effects_of(box, tool)
    assert len(effects) == 1 and effects[0].origin == "late" and effects[0].t == 90
    assert reissue.content["id"] == effects[0].record_ids[0]


def test_late_original_with_reused_key_is_rejected_at_execution(registry: SpecRegistry) -> None:
    """A re-issue that reuses the key with other parameters executes first; when the original
    lands, its parameters conflict, so it has no effect."""
    box = make_box(registry, mode="timeout_late", tool="billing_create_charge")
    box.call("billing_create_charge", keyed("billing_create_charge"))
    changed = box.call("billing_create_charge",
                       keyed("billing_create_charge", amount_cents=9999))
    assert not changed.is_error
    box.world.finish_in_flight()
    effects = effects_of(box, "billing_create_charge")
    assert [e.args["amount_cents"] for e in effects] == [9999]
    assert box.world.requests[0].fate == "rejected"


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_redelivery_is_absorbed_by_a_key(registry: SpecRegistry, contract: str) -> None:
    """A redelivered copy of a keyed request replays; without a key it duplicates."""
    tool = "mastodon_publish" if contract == "native" else "tickets_create"
    box = make_box(registry, contract=contract, mode="redelivery", tool=tool)
    box.call(tool, keyed(tool))
    box.call("wait", {"seconds": 10})
    assert len(effects_of(box, tool)) == 1
    bare = make_box(registry, contract=contract, mode="redelivery", tool=tool)
    bare.call(tool, write_args(tool))
    bare.call("wait", {"seconds": 10})
    assert len(effects_of(bare, tool)) == 2


def test_redelivered_keyed_batch_replays(registry: SpecRegistry) -> None:
    """Keys also guard batches against redelivery: the copy replays the completed batch and
    creates nothing, while an unkeyed copy inserts every row again."""
    box = make_box(registry, contract="keys_everywhere", mode="redelivery",
                   tool="db_insert_rows")
    box.call("db_insert_rows", keyed("db_insert_rows"))
    box.call("wait", {"seconds": 10})
    assert len(box.ledger.effects) == 4
    assert box.world.requests[0].redelivered_ids == []
    bare = make_box(registry, contract="keys_everywhere", mode="redelivery",
                    tool="db_insert_rows")
    first = bare.call("db_insert_rows", write_args("db_insert_rows"))
    bare.call("wait", {"seconds": 10})
    copies = bare.world.requests[0].redelivered_ids
    assert len(bare.ledger.effects) == 8 and len(copies) == 4
    assert set(copies).isdisjoint(first.content["ids"])
    assert [e.origin for e in bare.ledger.effects[4:]] == ["redelivery"] * 4
