"""Read-after-write under each consistency class (SPEC §1.4) and search semantics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from worldkit import make_box, write_args

from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.clock import EPOCH, VirtualClock, iso


def _ok(box: Sandbox, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = box.call(name, args)
    assert not result.is_error, result.text()
    return result.content


def _wait_until(box: Sandbox, t: float) -> None:
    """Advance the clock so that the next call is sent at exactly ``t``."""
    gap = int(t - box.now)
    assert gap >= 1
    _ok(box, "wait", {"seconds": gap})
    assert box.now == t


def _weibo_ids(box: Sandbox) -> set[str]:
    return {p["id"] for p in _ok(box, "weibo_list_posts", {})["posts"]}


def _search_ids(box: Sandbox, query: str) -> set[str]:
    return {t["id"] for t in _ok(box, "tickets_search", {"query": query})["tickets"]}


def _sent_ids(box: Sandbox, query: str) -> set[str]:
    return {m["id"] for m in _ok(box, "email_search_sent", {"query": query})["messages"]}


EVENTUAL: list[tuple[str, int, Callable[[Sandbox], str], Callable[[Sandbox], set[str]]]] = [
    ("weibo", 120, lambda b: _ok(b, "weibo_publish", write_args("weibo_publish"))["id"],
     _weibo_ids),
    ("tickets_search", 60,
     lambda b: _ok(b, "tickets_create", write_args("tickets_create"))["id"],
     lambda b: _search_ids(b, "elevated 500s")),
    ("email_search_sent", 120, lambda b: _ok(b, "email_send", write_args("email_send"))["id"],
     lambda b: _sent_ids(b, "incident escalation")),
]


@pytest.mark.parametrize(("name", "lag", "write", "read"), EVENTUAL, ids=[e[0] for e in EVENTUAL])
def test_eventual_read_is_stale_until_the_lag_has_passed(
        registry: SpecRegistry, name: str, lag: int, write: Callable[[Sandbox], str],
        read: Callable[[Sandbox], set[str]]) -> None:
    """A lagged read shows only effects committed more than λ seconds ago: stale right after
    the write and exactly at λ, fresh one second later."""
    box = make_box(registry)
    _wait_until(box, 10)
    record_id = write(box)
    assert box.ledger.effects[-1].t == 10
    assert record_id not in read(box)
    _wait_until(box, 10 + lag - 1)
    assert record_id not in read(box)
    assert record_id not in read(box)  # now at exactly 10 + λ: still not "more than" λ ago
    assert box.now == 10 + lag + 1
    assert record_id in read(box)


STRONG: list[tuple[str, str, dict[str, Any], Callable[[dict[str, Any]], list[str]]]] = [
    ("billing_create_charge", "billing_list_charges", {"customer_id": "cus_globex"},
     lambda body: [c["id"] for c in body["charges"]]),
    ("mastodon_publish", "mastodon_list_posts", {}, lambda body: [p["id"] for p in body["posts"]]),
    ("linkedin_publish", "linkedin_list_posts", {},
     lambda body: [p["id"] for p in body["posts"]]),
    ("tickets_create", "tickets_list", {"project": "OPS"},
     lambda body: [t["id"] for t in body["tickets"]]),
    ("tickets_add_comment", "tickets_get", {"ticket_id": "OPS-1001"},
     lambda body: [c["id"] for c in body["ticket"]["comments"]]),
    ("db_insert_row", "db_query", {"table": "audit_log"},
     lambda body: [r["id"] for r in body["rows"]]),
    ("deploy_trigger", "deploy_list_runs", {"service": "checkout-api", "environment": "staging"},
     lambda body: [r["id"] for r in body["runs"]]),
]


@pytest.mark.parametrize(("write", "read", "read_args", "ids"), STRONG, ids=[s[0] for s in STRONG])
def test_strong_read_is_fresh_immediately(
        registry: SpecRegistry, write: str, read: str, read_args: dict[str, Any],
        ids: Callable[[dict[str, Any]], list[str]]) -> None:
    """A strongly consistent read-back shows the write on the very next call."""
    box = make_box(registry)
    before = ids(_ok(box, read, read_args))
    body = _ok(box, write, write_args(write))
    after = ids(_ok(box, read, read_args))
    assert body["id"] not in before
    assert after[0 if write != "tickets_add_comment" else -1] == body["id"]


def test_billing_get_charge_sees_a_refund_immediately(registry: SpecRegistry) -> None:
    """The refund's read-back (get_charge) is strong."""
    box = make_box(registry)
    _ok(box, "billing_refund_charge", {"charge_id": "ch_seed_dup"})
    assert _ok(box, "billing_get_charge", {"charge_id": "ch_seed_dup"})["charge"]["refunded"]


def test_weibo_deletion_lags_like_publication(registry: SpecRegistry) -> None:
    """The cache also lags deletions: a deleted post stays listed for 120 s."""
    box = make_box(registry)
    post = _ok(box, "weibo_publish", write_args("weibo_publish"))["id"]
    _wait_until(box, 200)
    assert post in _weibo_ids(box)
    _ok(box, "social_delete_post", {"platform": "weibo", "post_id": post})  # at t = 201
    assert post in _weibo_ids(box)
    _wait_until(box, 321)
    assert post in _weibo_ids(box)  # exactly 120 s after the deletion: not yet
    assert post not in _weibo_ids(box)


def test_search_index_lags_comments_and_status(registry: SpecRegistry) -> None:
    """The tickets search index sees new comments and status changes only after 60 s."""
    box = make_box(registry)
    _ok(box, "tickets_add_comment", {"ticket_id": "OPS-1001", "body": "Zanzibar failover"})
    _ok(box, "tickets_set_status", {"ticket_id": "OPS-1001", "status": "resolved"})
    assert _search_ids(box, "zanzibar") == set()
    assert _ok(box, "tickets_search", {"query": "checkout latency"})["tickets"][0]["status"] == \
        "open"
    _wait_until(box, 70)
    assert _search_ids(box, "zanzibar") == {"OPS-1001"}
    assert _ok(box, "tickets_search", {"query": "checkout latency"})["tickets"][0]["status"] == \
        "resolved"
    # tickets_get, the strong path, saw both at once
    assert _ok(box, "tickets_get", {"ticket_id": "OPS-1001"})["ticket"]["status"] == "resolved"


def test_seeded_records_are_visible_to_lagged_reads_at_time_zero(registry: SpecRegistry) -> None:
    """Pre-existing records predate the episode, so every read path shows them at once."""
    box = make_box(registry)
    assert "wb_seed1" in _weibo_ids(box)
    assert _sent_ids(box, "invoice") == {"msg_seed1"}
    assert _search_ids(box, "press kit") == {"COMMS-1201"}


# -- search semantics --------------------------------------------------------------------------
@pytest.fixture
def searchable(registry: SpecRegistry) -> Sandbox:
    """Two tickets and two mails with overlapping words, old enough to be indexed."""
    box = make_box(registry)
    _ok(box, "tickets_create", {"project": "OPS", "title": "Payment Gateway timeout",
                                "description": "EU region only"})
    _ok(box, "tickets_create", {"project": "SUPPORT", "title": "Gateway maintenance notice",
                                "description": "planned for Friday"})
    _ok(box, "email_send", {"to": "finance@acme.example", "subject": "Refund processed",
                            "body": "The DUPLICATE charge was refunded."})
    _ok(box, "email_send", {"to": "ceo@acme.example", "subject": "Refund policy",
                            "body": "No change."})
    _ok(box, "wait", {"seconds": 300})
    return box


def _titles(box: Sandbox, query: str) -> list[str]:
    return sorted(t["title"] for t in _ok(box, "tickets_search", {"query": query})["tickets"])


def _subjects(box: Sandbox, query: str) -> list[str]:
    return sorted(m["subject"] for m in
                  _ok(box, "email_search_sent", {"query": query})["messages"])


def test_ticket_search_requires_every_term(searchable: Sandbox) -> None:
    """A ticket matches only when every query term occurs in it."""
    assert _titles(searchable, "gateway") == ["Gateway maintenance notice",
                                              "Payment Gateway timeout"]
    assert _titles(searchable, "gateway timeout") == ["Payment Gateway timeout"]
    assert _titles(searchable, "gateway timeout friday") == []


def test_ticket_search_is_case_insensitive_and_spans_fields(searchable: Sandbox) -> None:
    """Terms match case-insensitively, in any order, across title, description and comments."""
    assert _titles(searchable, "GATEWAY eu") == ["Payment Gateway timeout"]
    assert _titles(searchable, "friday MAINTENANCE") == ["Gateway maintenance notice"]
    assert _titles(searchable, "rolled BACK cache") == ["Checkout latency spike"]


def test_sent_search_requires_every_term_across_fields(searchable: Sandbox) -> None:
    """A message matches when every term occurs in its recipient, subject or body."""
    assert _subjects(searchable, "refund") == ["Refund policy", "Refund processed"]
    assert _subjects(searchable, "refund duplicate") == ["Refund processed"]
    assert _subjects(searchable, "REFUND ceo@acme.example") == ["Refund policy"]
    assert _subjects(searchable, "refund duplicate ceo") == []
    assert _subjects(searchable, "   ") == []


def test_a_search_term_occurs_anywhere_in_a_field(searchable: Sandbox) -> None:
    """Paper §4 and SPEC §1.4: "every query term occurs" in the record's fields, so a term
    matches inside a longer word ("maint" finds "maintenance") as well as a whole one."""
    assert _titles(searchable, "maint") == ["Gateway maintenance notice"]
    assert _titles(searchable, "gate") == ["Gateway maintenance notice",
                                           "Payment Gateway timeout"]
    assert _subjects(searchable, "fund") == ["Refund policy", "Refund processed"]
    assert _subjects(searchable, "duplicate charge") == ["Refund processed"]


def test_a_search_term_finds_other_forms_of_its_word(searchable: Sandbox) -> None:
    """A search engine finds "refunds" in a message that says "Refund" and "refunded"; a strict
    search would make a sent email look absent and invite a duplicate."""
    assert _subjects(searchable, "refunds") == ["Refund policy", "Refund processed"]
    assert _subjects(searchable, "refunded") == ["Refund policy", "Refund processed"]
    assert _subjects(searchable, "refunds duplicates") == ["Refund processed"]
    assert _titles(searchable, "timeouts") == ["Payment Gateway timeout"]
    assert _titles(searchable, "gateways planned") == ["Gateway maintenance notice"]
    assert _subjects(searchable, "refundable") == []  # a different word, not a form


def test_the_search_rule_is_stated_in_the_tool_descriptions(searchable: Sandbox) -> None:
    for tool in ("tickets_search", "email_search_sent"):
        description = searchable.world.tools[tool].description
        assert "every query term occurs" in description
        assert '"maint" finds "maintenance"' in description
        assert '"refunds" finds "refunded"' in description


def test_search_splits_query_and_text_on_punctuation(searchable: Sandbox) -> None:
    """Punctuation around a term is not part of it, inside it is: an address is one term, a
    comma is not part of a term, and a query of punctuation alone has no terms and finds
    nothing."""
    assert _titles(searchable, "gateway, timeout!") == ["Payment Gateway timeout"]
    assert _subjects(searchable, "ceo@acme.example") == ["Refund policy"]
    assert _subjects(searchable, "finance acme refund") == ["Refund processed"]
    assert _subjects(searchable, "inv-1990") == ["Invoice INV-1990 summary"]
    assert _subjects(searchable, "?!") == []


# -- the clock ---------------------------------------------------------------------------------
def test_clock_fires_events_in_time_order_with_their_own_time() -> None:
    """Scheduled events fire in time order as the clock passes them, at their own time, and
    drain fires everything still pending (in-flight requests complete at episode end)."""
    clock = VirtualClock()
    fired: list[tuple[str, float]] = []
    clock.schedule(50, lambda: fired.append(("b", clock.now)), "b")
    clock.schedule(20, lambda: fired.append(("a", clock.now)), "a")
    clock.schedule(50, lambda: fired.append(("c", clock.now)), "c")
    clock.schedule(900, lambda: fired.append(("d", clock.now)), "d")
    clock.advance(60)
    assert fired == [("a", 20), ("b", 50), ("c", 50)] and clock.now == 60
    assert [e.label for e in clock.pending()] == ["d"]
    clock.drain()
    assert fired[-1] == ("d", 900) and clock.now == 900
    with pytest.raises(ValueError):
        clock.schedule(10, lambda: None, "past")
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_iso_rendering_starts_at_the_spec_epoch() -> None:
    """Simulated second 0 is 2026-09-15T09:00:00Z."""
    assert EPOCH.isoformat() == "2026-09-15T09:00:00+00:00"
    assert iso(0) == "2026-09-15T09:00:00Z"
    assert iso(3661) == "2026-09-15T10:01:01Z"
    assert iso(1.5) == "2026-09-15T09:00:01.500Z"
