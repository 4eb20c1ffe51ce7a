"""Happy paths of every tool of SPEC §2, and the catalog's conformance to the §2 table."""

from __future__ import annotations

from typing import Any

import pytest
from worldkit import MIGRATION_ROWS, make_box, write_args

from limbo_plugin.contracts import ToolCatalog, ToolDefinition
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.world.clock import iso
from limbo_plugin.world.services import service_classes
from limbo_plugin.world.services.base import Service

SPEC_TOOLS = {
    "billing": {"billing_create_charge", "billing_refund_charge", "billing_list_charges",
                "billing_get_charge"},
    "social": {"mastodon_publish", "mastodon_list_posts", "weibo_publish", "weibo_list_posts",
               "linkedin_publish", "linkedin_list_posts", "x_publish", "social_delete_post"},
    "tickets": {"tickets_create", "tickets_list", "tickets_get", "tickets_search",
                "tickets_add_comment", "tickets_set_status"},
    "email": {"email_send", "email_search_sent"},
    "database": {"db_insert_rows", "db_insert_row", "db_upsert", "db_query", "db_delete_rows"},
    "deploy": {"deploy_trigger", "deploy_list_runs", "deploy_cancel_run"},
}
GENERAL = {"wait", "escalate_to_human", "finish"}
NON_IDEMPOTENT = {"billing_create_charge", "mastodon_publish", "weibo_publish", "linkedin_publish",
                  "x_publish", "tickets_create", "tickets_add_comment", "email_send",
                  "db_insert_rows", "db_insert_row", "deploy_trigger"}
NATIVE_KEYS = {"billing_create_charge", "mastodon_publish"}
SPEC_LAGS = {"weibo_publish": 120, "email_send": 120, "weibo_list_posts": 120,
             "email_search_sent": 120, "tickets_search": 60}


def spec_tools(catalog: ToolCatalog) -> dict[str, ToolDefinition]:
    """The catalog's tools of SPEC §2's services (a service added to the specs has its own)."""
    return {name: tool for name, tool in catalog.tools.items()
            if tool.service in {*SPEC_TOOLS, "general"}}


@pytest.fixture
def box(registry: SpecRegistry) -> Sandbox:
    return make_box(registry)


def ok(box: Sandbox, name: str, args: dict) -> dict:
    result = box.call(name, args)
    assert not result.is_error, result.text()
    return result.content


# -- catalog -----------------------------------------------------------------------------------
def test_catalog_has_exactly_the_spec_tools(registry: SpecRegistry) -> None:
    """SPEC §2 lists every tool; a missing or extra tool would change what agents can do."""
    catalog = registry.catalog()
    for service, tools in SPEC_TOOLS.items():
        assert {t.name for t in catalog.tools.values() if t.service == service} == tools
    assert set(catalog.tools) >= GENERAL
    box = make_box(registry, services=["email"])
    assert {t.name for t in box.list_tools()} == SPEC_TOOLS["email"] | GENERAL


def test_native_contract_classes_match_the_spec(registry: SpecRegistry) -> None:
    """Eleven non-idempotent write paths, two of which accept a key natively (SPEC §2)."""
    catalog = registry.catalog("native")
    tools = spec_tools(catalog).values()
    non_idem = {t.name for t in tools
                if t.contract.idempotency in ("non_idempotent", "key_optional")}
    assert non_idem == NON_IDEMPOTENT
    assert {t.name for t in tools if t.accepts_key} == NATIVE_KEYS
    for tool in tools:
        assert tool.contract.visibility_lag_s == SPEC_LAGS.get(tool.name, 0), tool.name
    assert catalog.contract("x_publish").read_back is None
    assert catalog.contract("tickets_add_comment").irreversible
    assert catalog.contract("email_send").irreversible


def test_keys_everywhere_adds_a_key_to_every_non_idempotent_write(registry: SpecRegistry) -> None:
    """SPEC §2.2: the counterfactual contract changes key support and nothing else."""
    native, keyed = registry.catalog("native"), registry.catalog("keys_everywhere")
    assert {t.name for t in spec_tools(keyed).values() if t.accepts_key} == NON_IDEMPOTENT
    for name, tool in keyed.tools.items():
        base = native.tools[name]
        assert tool.contract.read_back == base.contract.read_back
        assert tool.contract.visibility_lag_s == base.contract.visibility_lag_s
        if name in NON_IDEMPOTENT - NATIVE_KEYS:
            assert "idempotency_key" in tool.input_schema["properties"]
            assert "idempotency_key" not in base.input_schema["properties"]
            assert tool.description.startswith(base.description)


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_explicit_docs_warn_every_non_idempotent_write_as_the_paper_did(
        registry: SpecRegistry, contract: str) -> None:
    """SPEC §2.3 and Appendix A, paper E4: `explicit` appends "This operation is not
    idempotent: every call that reaches the service creates a new <record>." to every
    non-idempotent write, a write that accepts a key included."""
    catalog = registry.catalog(contract, "explicit")
    plain = registry.catalog(contract, "default")
    for name in NON_IDEMPOTENT:
        tool = catalog.tools[name]
        added = tool.description[len(plain.tools[name].description):].strip()
        noun = tool.contract.record_noun
        assert tool.description.startswith(plain.tools[name].description), name
        assert added == ("This operation is not idempotent: every call that reaches the "
                         f"service creates a new {noun}."), name
    for name, tool in spec_tools(catalog).items():
        if name not in NON_IDEMPOTENT:
            assert tool.description == plain.tools[name].description, name


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_explicit_keyed_docs_never_contradict_a_key(registry: SpecRegistry, contract: str
                                                    ) -> None:
    """`explicit_keyed`: a write without key support is called not idempotent; a write that
    accepts a key (natively, or every one under keys_everywhere) is told instead that a call
    without a key creates a new record every time and that a retry must reuse the key."""
    catalog = registry.catalog(contract, "explicit_keyed")
    plain = registry.catalog(contract, "default")
    for name in NON_IDEMPOTENT:
        tool = catalog.tools[name]
        added = tool.description[len(plain.tools[name].description):].strip()
        noun = tool.contract.record_noun
        assert tool.description.startswith(plain.tools[name].description), name
        if tool.accepts_key:
            assert "not idempotent" not in tool.description, name
            assert added == (f"A call without an idempotency_key creates a new {noun} every "
                             "time it reaches the service; to retry safely, send the same "
                             "idempotency_key again."), name
        else:
            assert added == ("This operation is not idempotent: every call that reaches the "
                             f"service creates a new {noun}."), name
    for name, tool in spec_tools(catalog).items():
        if name not in NON_IDEMPOTENT:
            assert tool.description == plain.tools[name].description, name


# -- billing -----------------------------------------------------------------------------------
def test_billing_charge_list_get_refund(box: Sandbox) -> None:
    """A charge is created, listed newest first, fetched, and refunded in full."""
    charge = ok(box, "billing_create_charge", write_args("billing_create_charge"))
    assert charge["status"] == "succeeded" and charge["amount_cents"] == 2500
    listed = ok(box, "billing_list_charges", {"customer_id": "cus_globex"})["charges"]
    assert [c["id"] for c in listed] == [charge["id"], "ch_seed_dup", "ch_seed_orig"]
    got = ok(box, "billing_get_charge", {"charge_id": charge["id"]})["charge"]
    assert got["description"] == "Invoice INV-2041" and got["refunded"] is False
    refund = ok(box, "billing_refund_charge", {"charge_id": "ch_seed_dup"})
    assert refund["charge_id"] == "ch_seed_dup" and refund["amount_cents"] == 4900
    dup = ok(box, "billing_get_charge", {"charge_id": "ch_seed_dup"})["charge"]
    assert dup["refunded"] is True and dup["refund_id"] == refund["id"]
    orig = ok(box, "billing_get_charge", {"charge_id": "ch_seed_orig"})["charge"]
    assert orig["refunded"] is False
    assert [e.tool for e in box.ledger.effects] == ["billing_create_charge",
                                                    "billing_refund_charge"]
    assert box.ledger.effects[0].record_ids == [charge["id"]]
    assert box.ledger.effects[0].intent == write_args("billing_create_charge")


def test_billing_refund_is_naturally_idempotent(box: Sandbox) -> None:
    """A second refund of the same charge returns the first refund and has no effect."""
    first = ok(box, "billing_refund_charge", {"charge_id": "ch_seed_dup"})
    second = ok(box, "billing_refund_charge", {"charge_id": "ch_seed_dup"})
    assert first == second
    assert len(box.ledger.effects) == 1


def test_billing_lists_only_that_customers_charges(box: Sandbox) -> None:
    """Listing is per customer: another customer's charge never shows."""
    args = {**write_args("billing_create_charge"), "customer_id": "cus_initech"}
    charge = ok(box, "billing_create_charge", args)
    assert [c["id"] for c in ok(box, "billing_list_charges",
                                {"customer_id": "cus_initech"})["charges"]] == [charge["id"]]
    globex = ok(box, "billing_list_charges", {"customer_id": "cus_globex"})["charges"]
    assert charge["id"] not in {c["id"] for c in globex}


# -- social ------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", ["mastodon", "linkedin"])
def test_publish_and_list_strong_platforms(box: Sandbox, platform: str) -> None:
    """Publishing returns id and URL; the strongly consistent listing shows it newest first."""
    post = ok(box, f"{platform}_publish", write_args(f"{platform}_publish"))
    assert post["platform"] == platform and post["id"] in post["url"]
    posts = ok(box, f"{platform}_list_posts", {})["posts"]
    assert posts[0]["id"] == post["id"] and posts[0]["text"] == write_args(
        f"{platform}_publish")["text"]
    assert len(posts) == 2


def test_weibo_publish_and_cached_listing(box: Sandbox) -> None:
    """Weibo publishes immediately; its listing shows the post once the cache catches up."""
    post = ok(box, "weibo_publish", write_args("weibo_publish"))
    assert post["platform"] == "weibo" and post["url"].startswith("https://weibo.com/")
    ok(box, "wait", {"seconds": 200})
    posts = ok(box, "weibo_list_posts", {})["posts"]
    assert [p["id"] for p in posts] == [post["id"], "wb_seed1"]


def test_x_publish_has_no_listing(box: Sandbox) -> None:
    """X publishes, and there is no tool to list X posts (SPEC §2: no read-back)."""
    post = ok(box, "x_publish", write_args("x_publish"))
    assert post["platform"] == "x" and post["url"].startswith("https://x.com/")
    assert "x_list_posts" not in box.world.tools
    assert box.call("x_list_posts", {}).error_type == "unknown_tool"
    assert box.ledger.effects[0].record_ids == [post["id"]]


def test_social_delete_post(box: Sandbox) -> None:
    """Deleting removes the post from the listing; deleting again has no effect."""
    post = ok(box, "mastodon_publish", write_args("mastodon_publish"))
    deleted = ok(box, "social_delete_post", {"platform": "mastodon", "post_id": post["id"]})
    assert deleted["deleted"] is True
    assert post["id"] not in {p["id"] for p in ok(box, "mastodon_list_posts", {})["posts"]}
    ok(box, "social_delete_post", {"platform": "mastodon", "post_id": post["id"]})
    assert [e.tool for e in box.ledger.effects] == ["mastodon_publish", "social_delete_post"]
    wrong = box.call("social_delete_post", {"platform": "linkedin", "post_id": post["id"]})
    assert wrong.status == 404


# -- tickets -----------------------------------------------------------------------------------
def test_tickets_create_list_get(box: Sandbox) -> None:
    """A ticket is created open in its project, listed newest first and fetched by id."""
    ticket = ok(box, "tickets_create", write_args("tickets_create"))
    assert ticket["id"].startswith("OPS-") and ticket["status"] == "open"
    assert ticket["id"] in ticket["url"]
    listed = ok(box, "tickets_list", {"project": "OPS"})["tickets"]
    assert [t["id"] for t in listed] == [ticket["id"], "OPS-1001"]
    assert ok(box, "tickets_list", {"project": "COMMS"})["tickets"][0]["id"] == "COMMS-1201"
    got = ok(box, "tickets_get", {"ticket_id": ticket["id"]})["ticket"]
    assert got["title"] == write_args("tickets_create")["title"]
    assert got["comments"] == [] and got["created"] == iso(0)


def test_tickets_comment_and_status(box: Sandbox) -> None:
    """Comments append to the ticket; a status change shows on get; same status is a no-op."""
    comment = ok(box, "tickets_add_comment", write_args("tickets_add_comment"))
    got = ok(box, "tickets_get", {"ticket_id": "OPS-1001"})["ticket"]
    assert [c["body"] for c in got["comments"]] == ["Rolled back the cache change",
                                                    write_args("tickets_add_comment")["body"]]
    assert got["comments"][-1]["id"] == comment["id"]
    assert ok(box, "tickets_set_status", {"ticket_id": "OPS-1001", "status": "resolved"}
              )["status"] == "resolved"
    assert ok(box, "tickets_get", {"ticket_id": "OPS-1001"})["ticket"]["status"] == "resolved"
    ok(box, "tickets_set_status", {"ticket_id": "OPS-1001", "status": "resolved"})
    assert [e.tool for e in box.ledger.effects] == ["tickets_add_comment", "tickets_set_status"]


def test_tickets_search_finds_seeded_and_new(box: Sandbox) -> None:
    """Search covers titles, descriptions and comments of every project."""
    assert [t["id"] for t in ok(box, "tickets_search", {"query": "cache"})["tickets"]] == [
        "OPS-1001"]
    ticket = ok(box, "tickets_create", write_args("tickets_create"))
    ok(box, "wait", {"seconds": 100})
    hits = ok(box, "tickets_search", {"query": "elevated"})["tickets"]
    assert [t["id"] for t in hits] == [ticket["id"]]


# -- email -------------------------------------------------------------------------------------
def test_email_send_and_search_sent(box: Sandbox) -> None:
    """A sent message gets an id and, after the Sent folder syncs, shows in the search."""
    sent = ok(box, "email_send", write_args("email_send"))
    assert sent["status"] == "sent" and sent["to"] == "oncall@acme.example"
    ok(box, "wait", {"seconds": 200})
    messages = ok(box, "email_search_sent", {"query": "escalation"})["messages"]
    assert [m["id"] for m in messages] == [sent["id"]]
    assert messages[0]["from"] == "ops@acme.example"
    assert box.ledger.effects[0].intent == {"to": "oncall@acme.example",
                                            "subject": "Incident OPS escalation"}


# -- database ----------------------------------------------------------------------------------
def test_db_insert_rows_in_order(box: Sandbox) -> None:
    """A batch inserts every row in order, one effect per row, ids returned in order."""
    body = ok(box, "db_insert_rows", write_args("db_insert_rows"))
    assert body["inserted"] == 4 and len(set(body["ids"])) == 4
    assert [e.record_ids[0] for e in box.ledger.effects] == body["ids"]
    assert [e.intent["row"] for e in box.ledger.effects] == MIGRATION_ROWS
    rows = ok(box, "db_query", {"table": "migrations", "where": {"applied_on": "2026-09-15"}})
    assert [r["name"] for r in rows["rows"]] == [r["name"] for r in MIGRATION_ROWS]
    assert ok(box, "db_query", {"table": "migrations"})["count"] == 5


def test_db_insert_row_and_query(box: Sandbox) -> None:
    """A single insert returns its id and the row is queryable by its columns."""
    body = ok(box, "db_insert_row", write_args("db_insert_row"))
    rows = ok(box, "db_query", {"table": "audit_log", "where": {"action": "migrations_recorded"}})
    assert [r["id"] for r in rows["rows"]] == [body["id"]] and rows["rows"][0]["count"] == 4
    assert ok(box, "db_query", {"table": "audit_log", "where": {"action": "other"}})["count"] == 0


def test_db_upsert_inserts_updates_and_is_idempotent(box: Sandbox) -> None:
    """Upsert updates the keyed row, inserts a new key, and a repeat changes nothing; the answer
    is the resulting row either way, so a repeat looks like the first attempt."""
    args = {"table": "feature_flags", "key": {"flag": "dark_mode"},
            "values": {"enabled": True, "cohort": "beta testers"}}
    first = ok(box, "db_upsert", args)
    assert first["id"] == "row_seed_f1"
    assert first["row"] == {"id": "row_seed_f1", "flag": "dark_mode", "enabled": True,
                            "cohort": "beta testers"}
    assert ok(box, "db_upsert", args) == first
    new = ok(box, "db_upsert", {**args, "key": {"flag": "smart_search"}})
    assert new["id"] not in ("row_seed_f1", "row_seed_f2")
    assert new["row"]["flag"] == "smart_search"
    rows = ok(box, "db_query", {"table": "feature_flags", "where": {"enabled": True}})["rows"]
    assert sorted(r["flag"] for r in rows) == ["dark_mode", "smart_search"]
    assert [e.kind for e in box.ledger.effects] == ["update", "create"]
    assert box.call("db_upsert", {**args, "table": "audit_log"}).status == 400
    assert box.call("db_upsert", {**args, "key": {"cohort": "x"}}).status == 400


def test_db_delete_rows(box: Sandbox) -> None:
    """Deleted rows disappear from queries; deleting them again has no effect."""
    body = ok(box, "db_insert_rows", write_args("db_insert_rows"))
    gone = ok(box, "db_delete_rows", {"table": "migrations", "ids": body["ids"][:2]})
    assert gone["deleted"] == 2
    left = ok(box, "db_query", {"table": "migrations", "where": {"applied_on": "2026-09-15"}})
    assert [r["id"] for r in left["rows"]] == body["ids"][2:]
    assert ok(box, "db_delete_rows", {"table": "migrations", "ids": body["ids"][:2]}
              )["deleted"] == 0
    assert len(box.ledger.effects) == 5


# -- deploy ------------------------------------------------------------------------------------
def test_deploy_trigger_list_cancel(box: Sandbox) -> None:
    """A run starts running, succeeds after its run time, and a cancelled run says so."""
    run = ok(box, "deploy_trigger", write_args("deploy_trigger"))
    assert run["status"] == "running" and run["environment"] == "staging"
    runs = ok(box, "deploy_list_runs", {"service": "checkout-api", "environment": "staging"})
    assert [(r["id"], r["status"]) for r in runs["runs"]] == [(run["id"], "running")]
    ok(box, "wait", {"seconds": 200})
    runs = ok(box, "deploy_list_runs", {"service": "checkout-api", "environment": "staging"})
    assert runs["runs"][0]["status"] == "succeeded"
    prod = ok(box, "deploy_list_runs", {"service": "checkout-api", "environment": "production"})
    assert [r["id"] for r in prod["runs"]] == ["run_seed1"]
    assert ok(box, "deploy_cancel_run", {"run_id": run["id"]})["status"] == "cancelled"
    runs = ok(box, "deploy_list_runs", {"service": "checkout-api", "environment": "staging"})
    assert runs["runs"][0]["status"] == "cancelled"
    assert box.call("deploy_trigger", {**write_args("deploy_trigger"),
                                       "service": "no-such-service"}).status == 404


# -- general tools -----------------------------------------------------------------------------
def test_wait_advances_the_clock(box: Sandbox) -> None:
    """wait(s) advances exactly s seconds and reports the new time; bounds are 1..3600."""
    body = ok(box, "wait", {"seconds": 125})
    assert box.now == 125 and body == {"waited_s": 125, "now": "2026-09-15T09:02:05Z"}
    for bad in (0, 3601, 2.5):
        assert box.call("wait", {"seconds": bad}).is_error
    assert box.now == 128


def test_tool_calls_cost_one_second(box: Sandbox) -> None:
    """Every tool call costs 1 s, reads, writes and rejected requests alike (SPEC §1.1)."""
    box.call("mastodon_list_posts", {})
    box.call("mastodon_publish", write_args("mastodon_publish"))
    box.call("billing_get_charge", {"charge_id": "ch_missing"})
    assert box.now == 3
    assert box.ledger.effects[0].t == 1


def test_escalate_costs_fifteen_minutes(box: Sandbox) -> None:
    """escalate_to_human answers after 900 s."""
    body = ok(box, "escalate_to_human", {"message": "Is everything fine?"})
    assert box.now == 900 and body["operations"] == []


def test_finish_records_the_final_report(box: Sandbox) -> None:
    """finish stores status, summary and uncertain operations for the grader."""
    body = ok(box, "finish", {"status": "partial", "summary": "done some",
                              "uncertain_operations": ["email to on-call"]})
    assert body == {"ok": True, "status": "partial"}
    final = box.world.final
    assert final is not None and final.status == "partial"
    assert final.uncertain_operations == ["email to on-call"] and final.t == box.now
    assert box.call("finish", {"status": "great", "summary": ""}).is_error


MINIMAL_SEEDS: dict[str, dict[str, Any]] = {
    "billing": {"customers": [{"id": "cus_a"}],
                "charges": [{"id": "ch_1", "customer_id": "cus_a", "amount_cents": 5,
                             "description": "d"}]},
    "social": {"posts": [{"id": "wb_1", "platform": "weibo", "text": "hello"}]},
    "tickets": {"tickets": [{"id": "OPS-1", "project": "OPS", "title": "alpha"}]},
    "email": {"sent": [{"id": "msg_1", "to": "a@b.example", "subject": "alpha"}]},
    "database": {"tables": {"t": {"columns": ["a"], "rows": [{"a": 1}]}}},
    "deploy": {"services": ["api"],
               "runs": [{"id": "run_1", "service": "api", "version": "1",
                         "environment": "staging"}]},
}
MINIMAL_READS = [
    ("billing_list_charges", {"customer_id": "cus_a"}, "ch_1"),
    ("billing_get_charge", {"charge_id": "ch_1"}, "ch_1"),
    ("weibo_list_posts", {}, "wb_1"),
    ("tickets_list", {"project": "OPS"}, "OPS-1"),
    ("tickets_get", {"ticket_id": "OPS-1"}, "OPS-1"),
    ("tickets_search", {"query": "alpha"}, "OPS-1"),
    ("email_search_sent", {"query": "alpha"}, "msg_1"),
    ("db_query", {"table": "t"}, "row_seed_t_0"),
    ("deploy_list_runs", {"service": "api", "environment": "staging"}, "run_1"),
]


@pytest.mark.parametrize(("tool", "args", "record_id"), MINIMAL_READS,
                         ids=[r[0] for r in MINIMAL_READS])
def test_minimal_seed_records_are_served(registry: SpecRegistry, tool: str, args: dict,
                                         record_id: str) -> None:
    """Seed records that leave optional fields out (a ticket's creation time, a mail's body)
    still serve every read; optional fields get defaults."""
    box = Sandbox(list(MINIMAL_SEEDS), seed_records=MINIMAL_SEEDS, registry=registry)
    result = box.call(tool, args)
    assert not result.is_error, result.text()
    assert record_id in result.text()


def test_services_register_their_handlers_by_tool_name(registry: SpecRegistry) -> None:
    """Each YAML tool of a service is dispatched to the method marked with its name; a class
    is a service only where a module declares it (``SERVICES``), not wherever it is defined
    (a subclass in a test or a helper module changes nothing)."""
    for name, spec in registry.services.items():
        if name == "general":
            continue
        assert {tool.name for tool in spec.tools} <= set(service_classes()[name].handlers), name
    shadow = type("ShadowEmail", (Service,), {"name": "email"})
    assert service_classes()["email"] is not shadow
    assert service_classes()["email"].__name__ == "EmailService"
