"""Tool API robustness: whatever a caller sends, the transport answers with a structured tool
error (``is_error``, a ``type`` and a ``message``), leaves the ledger alone and never raises."""

from __future__ import annotations

from typing import Any

import pytest
from worldkit import MIGRATION_ROWS, assert_tool_error, make_box, write_args

from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.toolapi import ToolCall, ToolResult, detached, normalize_arguments


@pytest.fixture
def box(registry: SpecRegistry) -> Sandbox:
    """A world with one committed effect, so 'ledger unchanged' is not trivially empty."""
    box = make_box(registry, services=["billing", "social", "tickets", "database", "deploy",
                                       "email"])
    assert not box.call("mastodon_publish", write_args("mastodon_publish")).is_error
    return box


def _send(box: Sandbox, name: Any, arguments: Any) -> ToolResult:
    before, now = box.ledger.to_json(), box.now
    result = box.transport.call(ToolCall(name=name, arguments=arguments))
    assert_tool_error(result)
    assert box.ledger.to_json() == before
    assert box.now == now + 1
    return result


UNKNOWN_TOOLS: list[Any] = ["nope", "", "billing_delete_customer", "BILLING_CREATE_CHARGE",
                            "x_list_posts", None, 42, "wait; rm -rf /"]


@pytest.mark.parametrize("name", UNKNOWN_TOOLS, ids=[repr(n)[:20] for n in UNKNOWN_TOOLS])
def test_unknown_tool(box: Sandbox, name: Any) -> None:
    """An unknown name is an ``unknown_tool`` error listing the tools that exist."""
    result = _send(box, name, {})
    assert result.error_type == "unknown_tool"
    assert "mastodon_publish" in (result.error or {})["message"]


def test_tool_of_a_service_outside_the_world_is_unknown(registry: SpecRegistry) -> None:
    """Only the task's services (and the general tools) exist in a world."""
    box = make_box(registry, services=["email"])
    assert _send(box, "billing_create_charge",
                 write_args("billing_create_charge")).error_type == "unknown_tool"


BAD_ARGUMENTS: list[Any] = [
    [], [1, 2], 7, 3.5, True, "not json", '{"text": ', "{'text': 'single quotes'}", '["a"]',
    "null", '"just a string"', b"\xff\xfe", '{"text": NaN}', '{"text": Infinity}',
    {"text": float("nan")}, {"text": float("inf")}, {"text": {1, 2}}, {"text": object()},
    {1: "int key", "text": "x"}, "[" * 5000, '{"text": "\\ud800"}', {"text": "\ud800"},
]


@pytest.mark.parametrize("arguments", BAD_ARGUMENTS, ids=[repr(a)[:24] for a in BAD_ARGUMENTS])
def test_malformed_arguments(box: Sandbox, arguments: Any) -> None:
    """Non-objects, invalid JSON, NaN/Infinity, non-JSON values and lone surrogates are
    ``invalid_arguments`` errors before anything reaches the service."""
    result = _send(box, "mastodon_publish", arguments)
    assert result.error_type == "invalid_arguments"
    assert len(box.world.requests) == 1


def test_malformed_arguments_through_the_sandbox(box: Sandbox) -> None:
    """Sandbox.call passes falsy non-object arguments through instead of reading them as {}
    (an empty JSON text still means "no arguments", as models send it)."""
    assert not box.call("mastodon_list_posts", "").is_error
    arguments: object
    for arguments in ([], 0, False):
        result = box.call("mastodon_list_posts", arguments)
        assert result.error_type == "invalid_arguments", arguments
    assert not box.call("mastodon_list_posts").is_error


INVALID: list[tuple[str, dict[str, Any]]] = [
    ("billing_create_charge", {"customer_id": "cus_globex", "amount_cents": 100}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "amount_cents": "100"}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "amount_cents": 1.5}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "amount_cents": True}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "amount_cents": -5}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "currency": "USD"}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "idempotency_key": ""}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "surprise": 1}),
    ("mastodon_publish", {"text": ""}),
    ("mastodon_publish", {"text": None}),
    ("mastodon_publish", {"text": ["a list"]}),
    ("x_publish", {"text": "x" * 281}),
    ("tickets_create", {"project": "ENG", "title": "t", "description": "d"}),
    ("tickets_set_status", {"ticket_id": "OPS-1001", "status": "done"}),
    ("email_send", {"to": "not-an-address", "subject": "s", "body": "b"}),
    ("email_send", {"to": "a@b.c", "subject": "s"}),
    ("db_insert_rows", {"table": "migrations", "rows": []}),
    ("db_insert_rows", {"table": "migrations", "rows": [MIGRATION_ROWS[0]] * 101}),
    ("db_insert_rows", {"table": "migrations", "rows": [[1, 2]]}),
    ("db_insert_rows", {"table": "Migrations!", "rows": MIGRATION_ROWS}),
    ("db_insert_row", {"table": "audit_log", "row": {"action": {"nested": 1}}}),
    ("db_insert_row", {"table": "audit_log", "row": {"no_such_column": 1}}),
    ("db_upsert", {"table": "feature_flags", "key": {"flag": "x"}, "values": {}}),
    ("db_query", {"table": "migrations", "where": {"name": ["a"]}}),
    ("deploy_trigger", {"service": "checkout-api", "version": "1", "environment": "qa"}),
    ("social_delete_post", {"platform": "myspace", "post_id": "p"}),
    ("wait", {"seconds": 0}),
    ("wait", {"seconds": "10"}),
    ("wait", {}),
    ("escalate_to_human", {"message": ""}),
    ("finish", {"status": "completed"}),
    ("finish", {"status": "completed", "summary": "s", "uncertain_operations": "all"}),
]


@pytest.mark.parametrize(("tool", "arguments"), INVALID,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(INVALID)])
def test_missing_mistyped_or_out_of_range_arguments(box: Sandbox, tool: str,
                                                    arguments: dict[str, Any]) -> None:
    """Schema and validation errors are 4xx tool errors with no effect."""
    result = _send(box, tool, arguments)
    assert result.status is not None and 400 <= result.status < 500
    assert box.world.final is None


UNKNOWN_IDS: list[tuple[str, dict[str, Any]]] = [
    ("billing_get_charge", {"charge_id": "ch_nope"}),
    ("billing_refund_charge", {"charge_id": "ch_nope"}),
    ("billing_list_charges", {"customer_id": "cus_nope"}),
    ("billing_create_charge", {**write_args("billing_create_charge"), "customer_id": "cus_x"}),
    ("social_delete_post", {"platform": "weibo", "post_id": "wb_nope"}),
    ("tickets_get", {"ticket_id": "OPS-1"}),
    ("tickets_add_comment", {"ticket_id": "OPS-1", "body": "hello"}),
    ("tickets_set_status", {"ticket_id": "OPS-1", "status": "resolved"}),
    ("db_query", {"table": "nope"}),
    ("db_delete_rows", {"table": "migrations", "ids": ["row_nope"]}),
    ("db_delete_rows", {"table": "nope", "ids": ["row_seed_m1"]}),
    ("deploy_cancel_run", {"run_id": "run_nope"}),
    ("deploy_list_runs", {"service": "nope", "environment": "staging"}),
]


@pytest.mark.parametrize(("tool", "arguments"), UNKNOWN_IDS,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(UNKNOWN_IDS)])
def test_unknown_ids(box: Sandbox, tool: str, arguments: dict[str, Any]) -> None:
    """References to records that do not exist are 404 tool errors with no effect."""
    assert _send(box, tool, arguments).status == 404


ABSURD: list[tuple[str, Any]] = [
    ("mastodon_publish", {"text": "x" * 200_000}),
    ("mastodon_publish", '{"text": "' + "y" * 150_000 + '"}'),
    ("email_send", {"to": "a@b.c", "subject": "s", "body": "é" * 60_000}),
    ("db_insert_rows", {"table": "migrations",
                        "rows": [{"name": "n" * 2000, "database": "d"}] * 90}),
    ("db_insert_rows", {"table": "migrations", "rows": [{"name": str(i)} for i in range(5000)]}),
    ("wait", {"seconds": 10**400}),
    ("mastodon_publish", {"text": "ok", "padding": ["z" * 1000] * 200}),
]


@pytest.mark.parametrize(("tool", "arguments"), ABSURD,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(ABSURD)])
def test_absurd_sizes(box: Sandbox, tool: str, arguments: Any) -> None:
    """Huge strings, thousands of rows, payloads over 100 kB: a tool error, nothing stored."""
    result = _send(box, tool, arguments)
    assert result.error_type in ("invalid_arguments", "http")


def test_large_but_valid_arguments_are_accepted(box: Sandbox) -> None:
    """The limits are limits, not accidents: the largest valid batch goes through."""
    rows = [{"name": f"m{i}", "database": "d" * 500} for i in range(100)]
    result = box.call("db_insert_rows", {"table": "migrations", "rows": rows})
    assert not result.is_error and result.content["inserted"] == 100


def test_json_text_arguments_are_accepted(box: Sandbox) -> None:
    """Models send arguments as JSON text: a valid object in text form works like a dict."""
    result = box.transport.call(ToolCall("linkedin_publish", '{"text": "Hello from JSON"}'))
    assert not result.is_error
    assert box.ledger.effects[-1].args == {"text": "Hello from JSON"}
    assert normalize_arguments("   ") == ({}, None)
    assert normalize_arguments(None) == ({}, None)


def test_world_keeps_working_after_garbage(box: Sandbox) -> None:
    """After a barrage of bad calls the world still answers valid ones normally."""
    for arguments in BAD_ARGUMENTS[:8]:
        box.transport.call(ToolCall("tickets_create", arguments))
    result = box.call("tickets_create", write_args("tickets_create"))
    assert not result.is_error and box.ledger.effects[-1].tool == "tickets_create"


def test_results_are_detached_from_world_state(box: Sandbox) -> None:
    """Mutating a returned result must not alter the ground truth or later answers."""
    listed = box.call("billing_list_charges", {"customer_id": "cus_globex"})
    listed.content["charges"][0]["amount_cents"] = 1
    listed.content["charges"].clear()
    charge = box.call("billing_get_charge", {"charge_id": "ch_seed_dup"}).content["charge"]
    assert charge["amount_cents"] == 4900
    posts = box.call("mastodon_list_posts", {})
    posts.content["posts"][0]["text"] = "tampered"
    assert box.call("mastodon_list_posts", {}).content["posts"][0]["text"] != "tampered"
    answer = box.call("escalate_to_human", {"message": "hi"})
    answer.content["operations"].append("x")
    assert box.ledger.effects[0].args == write_args("mastodon_publish")


def test_arguments_are_detached_from_the_caller(box: Sandbox) -> None:
    """The world keeps its own copy of the arguments: the caller may reuse its dict."""
    args = write_args("db_insert_row")
    box.call("db_insert_row", args)
    args["row"]["action"] = "changed"
    rows = box.call("db_query", {"table": "audit_log"}).content["rows"]
    assert rows[0]["action"] == "migrations_recorded"
    assert box.ledger.effects[-1].intent["row"]["action"] == "migrations_recorded"


def test_a_detached_answer_is_an_equal_copy_sharing_nothing_mutable() -> None:
    body: dict[str, Any] = {"rows": [{"id": "r1", "tags": ["a"]}], "n": 1, "ok": True,
                            "x": None, "f": 1.5, "pair": ("a", ["b"]), "seen": {1, 2}}
    copy = detached(body)
    assert copy == body
    copy["rows"][0]["tags"].append("b")
    copy["pair"][1].append("c")  # not JSON: copied by copy.deepcopy
    copy["seen"].add(3)
    assert body == {"rows": [{"id": "r1", "tags": ["a"]}], "n": 1, "ok": True, "x": None,
                    "f": 1.5, "pair": ("a", ["b"]), "seen": {1, 2}}


def test_a_caller_cannot_alter_the_worlds_records_through_an_answer(
        registry: SpecRegistry) -> None:
    box = make_box(registry)
    customer = write_args("billing_create_charge")["customer_id"]
    box.call("billing_create_charge", write_args("billing_create_charge"))
    listed = box.call("billing_list_charges", {"customer_id": customer}).content
    before = [dict(charge) for charge in listed["charges"]]
    listed["charges"][0]["amount_cents"] = 1
    listed["charges"].clear()
    assert box.call("billing_list_charges", {"customer_id": customer}).content["charges"] == \
        before
