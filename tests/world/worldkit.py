"""Shared building blocks of the world tests: seed records, canonical calls, sandboxes, checks.

The constants here restate SPEC §2–§3 (tools, lags, fault groups) on purpose: the tests compare
the implementation and the YAML specs against the written spec, not against themselves.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Any

from limbo_plugin.faults import FaultPlan
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.models import FocalTrigger
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolResult
from limbo_plugin.world.ledger import Ledger

ALL_SERVICES = ["billing", "social", "tickets", "email", "database", "deploy"]

SEED_RECORDS: dict[str, dict[str, Any]] = {
    "billing": {
        "customers": [
            {"id": "cus_globex", "name": "Globex Corporation", "email": "billing@globex.example"},
            {"id": "cus_initech", "name": "Initech", "email": "accounts@initech.example"},
        ],
        "charges": [
            {"id": "ch_seed_orig", "customer_id": "cus_globex", "amount_cents": 4900,
             "description": "Pro plan, September", "created": "2026-09-14T08:12:00Z"},
            {"id": "ch_seed_dup", "customer_id": "cus_globex", "amount_cents": 4900,
             "description": "Pro plan, September", "created": "2026-09-14T08:12:41Z"},
        ],
    },
    "social": {
        "posts": [
            {"id": "md_seed1", "platform": "mastodon", "text": "Juniper 1.2.0 is available now.",
             "created": "2026-08-28T10:00:00Z"},
            {"id": "wb_seed1", "platform": "weibo", "text": "Juniper 1.2.0 is available now.",
             "created": "2026-08-28T10:01:00Z"},
            {"id": "li_seed1", "platform": "linkedin", "text": "We are hiring SREs.",
             "created": "2026-09-02T08:00:00Z"},
            {"id": "x_seed1", "platform": "x", "text": "Juniper 1.2.0 ships today.",
             "created": "2026-08-28T10:03:00Z"},
        ],
    },
    "tickets": {
        "tickets": [
            {"id": "OPS-1001", "project": "OPS", "title": "Checkout latency spike",
             "description": "p99 above 2s in eu-west", "status": "open",
             "comments": ["Rolled back the cache change"], "created": "2026-09-14T07:00:00Z"},
            {"id": "COMMS-1201", "project": "COMMS", "title": "Press kit refresh",
             "description": "Update logos", "status": "resolved",
             "created": "2026-09-03T12:00:00Z"},
            {"id": "REL-300", "project": "REL", "title": "Release checkout-api 1.5.0",
             "description": "", "status": "open", "created": "2026-09-14T15:00:00Z"},
        ],
    },
    "email": {
        "sent": [
            {"id": "msg_seed1", "to": "finance@acme.example", "subject": "Invoice INV-1990 summary",
             "body": "Charges ch_seed_orig and ch_seed_dup.", "created": "2026-09-01T10:00:00Z"},
        ],
    },
    "database": {
        "tables": {
            "migrations": {
                "columns": ["name", "database", "applied_on"],
                "rows": [{"id": "row_seed_m1", "name": "0040_create_carts", "database": "orders-db",
                          "applied_on": "2026-09-08"}],
            },
            "audit_log": {"columns": ["action", "count", "detail", "actor"], "rows": []},
            "feature_flags": {
                "columns": ["flag", "enabled", "cohort"],
                "key": ["flag"],
                "rows": [{"id": "row_seed_f1", "flag": "dark_mode", "enabled": False,
                          "cohort": "none"},
                         {"id": "row_seed_f2", "flag": "live_chat", "enabled": False,
                          "cohort": "none"}],
            },
        },
    },
    "deploy": {
        "services": ["checkout-api", "search-indexer"],
        "runs": [{"id": "run_seed1", "service": "checkout-api", "version": "1.4.0",
                  "environment": "production", "created": "2026-09-01T10:00:00Z"}],
    },
}

MIGRATION_ROWS = [
    {"name": f"004{i}_step", "database": "orders-db", "applied_on": "2026-09-15"}
    for i in range(1, 5)
]

WRITE_CALLS: dict[str, dict[str, Any]] = {
    "billing_create_charge": {"customer_id": "cus_globex", "amount_cents": 2500,
                              "currency": "usd", "description": "Invoice INV-2041"},
    "mastodon_publish": {"text": "Juniper 2.0.1 is available now, with dark mode."},
    "weibo_publish": {"text": "Juniper 2.0.1 is available now, with offline mode."},
    "linkedin_publish": {"text": "Juniper 2.0.1 is available now, with bulk export."},
    "x_publish": {"text": "Juniper 2.0.1 is available now."},
    "tickets_create": {"project": "OPS", "title": "[SEV2] checkout-api: elevated 500s",
                       "description": "Error rate above 5% since 08:40"},
    "tickets_add_comment": {"ticket_id": "OPS-1001", "body": "First findings: a cache node died"},
    "email_send": {"to": "oncall@acme.example", "subject": "Incident OPS escalation",
                   "body": "Please look at the checkout ticket."},
    "db_insert_rows": {"table": "migrations", "rows": MIGRATION_ROWS},
    "db_insert_row": {"table": "audit_log",
                      "row": {"action": "migrations_recorded", "count": 4, "actor": "ops"}},
    "deploy_trigger": {"service": "checkout-api", "version": "1.5.0", "environment": "staging"},
}
"""One valid request per non-idempotent write path of SPEC §2 (the eleven focal-write tools)."""

READ_BACKS: dict[str, tuple[str, dict[str, Any], int] | None] = {
    "billing_create_charge": ("billing_list_charges", {"customer_id": "cus_globex"}, 0),
    "mastodon_publish": ("mastodon_list_posts", {}, 0),
    "weibo_publish": ("weibo_list_posts", {}, 120),
    "linkedin_publish": ("linkedin_list_posts", {}, 0),
    "x_publish": None,
    "tickets_create": ("tickets_list", {"project": "OPS"}, 0),
    "tickets_add_comment": ("tickets_get", {"ticket_id": "OPS-1001"}, 0),
    "email_send": ("email_search_sent", {"query": "incident escalation"}, 120),
    "db_insert_rows": ("db_query", {"table": "migrations", "where": {"database": "orders-db"}}, 0),
    "db_insert_row": ("db_query", {"table": "audit_log"}, 0),
    "deploy_trigger": ("deploy_list_runs", {"service": "checkout-api", "environment": "staging"},
                       0),
}
"""SPEC §2: each write's read-back and its lag in seconds (``None``: X has no listing)."""

MODE_TABLE: dict[str, tuple[str, str, str]] = {
    "timeout_pre": ("T", "not_executed", "absent"),
    "timeout_post": ("T", "lost_ack", "committed"),
    "timeout_late": ("T", "late_commit", "late"),
    "timeout_late_tail": ("T", "late_commit", "late"),
    "http500_pre": ("E", "not_executed", "absent"),
    "http500_post": ("E", "misleading_500", "committed"),
    "partial_batch": ("E", "partial_batch", "partial"),
    "redelivery": ("S", "redelivery", "duplicated"),
    "http503": ("-", "explicit", "absent"),
    "http429": ("-", "explicit", "absent"),
    "outage": ("-", "explicit", "absent"),
    "schema_drift": ("-", "explicit", "committed"),
}
"""SPEC §3: the twelve fault modes as ``(group, family, hidden outcome)``."""

GROUP_T = ["timeout_pre", "timeout_post", "timeout_late", "timeout_late_tail"]
GROUP_E = ["http500_pre", "http500_post", "partial_batch"]
TIMEOUT_BODY = {"error": {"type": "timeout", "message": "request timed out after 30s"}}
HTTP500_BODY = {"error": {"type": "http", "status": 500, "message": "Internal Server Error"}}


def seed_records(services: Iterable[str] = ALL_SERVICES) -> dict[str, dict[str, Any]]:
    """A private deep copy of the seed records of ``services``."""
    return {name: copy.deepcopy(SEED_RECORDS[name]) for name in services}


def make_box(registry: SpecRegistry, *, mode: str | None = None, tool: str | None = None,
             where: dict[str, Any] | None = None, n: int = 1, world_seed: int = 7,
             contract: str = "native", docs: str = "default", base_seed: int = 11,
             operator: str = "truthful", services: Sequence[str] = ALL_SERVICES,
             extra_records: dict[str, dict[str, Any]] | None = None) -> Sandbox:
    """A seeded world for ``services``; with ``mode`` and ``tool``, a fault armed on ``tool``."""
    fault = None
    if mode is not None:
        trigger = FocalTrigger(tool or "", dict(where or {}), n) if tool else None
        fault = FaultPlan(mode=registry.fault_mode(mode), trigger=trigger, world_seed=world_seed)
    records = seed_records(services)
    for service, extra in (extra_records or {}).items():
        for collection, items in extra.items():
            records[service][collection] = records[service].get(collection, []) + list(items)
    return Sandbox(list(services), contract=contract, docs=docs, base_seed=base_seed,
                   seed_records=records, fault=fault, operator=operator, registry=registry)


def write_args(tool: str) -> dict[str, Any]:
    return copy.deepcopy(WRITE_CALLS[tool])


def observe(box: Sandbox, steps: Sequence[tuple[str, dict[str, Any]]]
            ) -> list[tuple[str, float]]:
    """Run ``steps`` and return each observation: the response bytes and the clock after it."""
    seen = []
    for name, args in steps:
        result = box.call(name, copy.deepcopy(args))
        seen.append((result.text(), box.now))
    return seen


def effects_of(box: Sandbox, tool: str) -> list[Any]:
    return [e for e in box.ledger.effects if e.tool == tool]


def created_ids(box: Sandbox, tool: str | None = None) -> list[str]:
    return [rid for e in box.ledger.effects
            if e.kind == "create" and (tool is None or e.tool == tool) for rid in e.record_ids]


def assert_tool_error(result: ToolResult) -> dict[str, Any]:
    """A structured tool error: ``is_error`` and an ``error`` object with a type and a message."""
    assert isinstance(result, ToolResult)
    assert result.is_error, result.text()
    error = result.content.get("error")
    assert isinstance(error, dict), result.text()
    assert isinstance(error.get("type"), str) and error["type"], result.text()
    assert isinstance(error.get("message"), str) and error["message"], result.text()
    result.text()  # the canonical JSON must render (no NaN, no non-JSON values)
    return error


def assert_ledger_consistent(ledger: Ledger, now: float) -> None:
    """The ledger invariants of SPEC §1.2: append-only order, monotone time, undo after commit,
    every record created by exactly one effect."""
    effects = ledger.effects
    assert [e.seq for e in effects] == list(range(1, len(effects) + 1))
    times = [e.t for e in effects]
    assert times == sorted(times), times
    assert all(t <= now for t in times)
    created: list[str] = []
    for effect in effects:
        assert effect.origin in ("agent", "harness", "late", "redelivery", "batch_resume")
        if effect.undone_at is not None:
            assert effect.undone_at >= effect.t
            assert effect.undone_at <= now
        if effect.kind == "create":
            created.extend(effect.record_ids)
            for record_id in effect.record_ids:
                assert ledger.creator_of(record_id) is effect
    assert len(created) == len(set(created)), created


def ledger_snapshot(box: Sandbox) -> list[dict[str, Any]]:
    return copy.deepcopy(box.ledger.to_json())
