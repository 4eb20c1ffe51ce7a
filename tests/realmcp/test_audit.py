"""``limbo audit`` on Limbo's own catalogue, where the answer is known from the specs, and on
three third-party servers as they ship."""

from __future__ import annotations

import json
from typing import Any

import pytest
from realkit import REGISTRY, audit_json, catalogue_server, limbo, real_server

from limbo_plugin.realmcp.audit import Auditor, ListedTool
from limbo_plugin.realmcp.rules import load_rules
from limbo_plugin.server.launch import mcp_http_server

NON_IDEMPOTENT = ("non_idempotent", "key_optional")


def _expected_lag(contract: str, tool: str) -> int:
    catalog = REGISTRY.catalog(contract)
    definition = catalog.tools[tool]
    read_back = definition.contract.read_back
    assert read_back is not None
    return max(definition.contract.visibility_lag_s,
               catalog.tools[read_back.tool].contract.visibility_lag_s)


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_audit_of_the_catalogue_matches_the_contract(contract: str) -> None:
    with catalogue_server(contract) as (command, env):
        status, document = audit_json(command, env)
    catalog = REGISTRY.catalog(contract)
    rows = {row["tool"]: row for row in document["tools"]}
    assert set(rows) == set(catalog.tools)
    for name, definition in catalog.tools.items():
        row, truth = rows[name], definition.contract
        assert row["writes"] == truth.is_write, name
        if not truth.is_write:
            continue
        assert row["key"] == truth.key_param, name
        assert row["retry_safe"] == (truth.idempotency not in ("non_idempotent",)), name
        if truth.idempotency in NON_IDEMPOTENT:
            # the read-back a client would use first is the one the contract declares
            expected = [truth.read_back.tool] if truth.read_back else []
            assert row["read_back"][:1] == expected, name
            if truth.read_back:
                assert row["lag_s"] == _expected_lag(contract, name), name
    unprotected = document["server"]["unprotected_writes"]
    if contract == "native":  # X offers neither a key nor a way to read a post back
        assert (unprotected, status) == (["x_publish"], 1)
        assert "Unsafe to retry" in rows["x_publish"]["advice"]
        assert rows["billing_create_charge"]["evidence"]["key"] == "parameter 'idempotency_key'"
    else:  # every non-idempotent write gained a key
        assert (unprotected, status) == ([], 0)


def test_undocumented_consistency_is_reported_as_such() -> None:
    tools = list(REGISTRY.catalog("native", "no_consistency_docs").tools.values())
    listed = [ListedTool(t.name, t.description, t.input_schema, t.annotations(), {})
              for t in tools]
    rows = {r.tool: r for r in Auditor(listed, load_rules()).audit()}
    assert rows["email_send"].consistency == "undocumented"
    assert rows["email_send"].lag_s is None
    documented = {r.tool: r for r in Auditor(
        [ListedTool(t.name, t.description, t.input_schema, t.annotations(), {})
         for t in REGISTRY.catalog("native").tools.values()], load_rules()).audit()}
    assert documented["email_send"].lag_s == 120


@pytest.mark.slow
def test_the_table_and_the_http_transport_agree_with_stdio() -> None:
    with catalogue_server("native") as (command, env):
        _, by_stdio = audit_json(command, env)
        table = limbo("audit", "--", *command, env=env)
        url = command[command.index("--url") + 1]
        token = env["LIMBO_SANDBOX_TOKEN"]
        with mcp_http_server(url, token) as mcp_url:
            refused = limbo("audit", "--json", "--url", mcp_url)
            done = limbo("audit", "--json", "--url", mcp_url,
                         "--header", f"Authorization: Bearer {token}")
    assert table.returncode == 1
    assert "| x_publish | yes (annotation readOnlyHint=false) |" in table.stdout
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["tools"] == by_stdio["tools"]
    assert refused.returncode == 2 and "cannot audit" in refused.stderr, refused.stderr
    assert f"{mcp_url}: answered HTTP 401 Unauthorized" in refused.stderr, refused.stderr
    assert refused.stderr.count("\n") == 1 and token not in refused.stderr


@pytest.mark.parametrize("argv, expected", [
    (["--", "limbo-no-such-program"], "'limbo-no-such-program' is not a program on PATH"),
    ([], "no server: give -- COMMAND ARGS"),
    (["--url", "ftp://x"], "--url must be an http(s) URL"),
    (["--url", "http://127.0.0.1:9/mcp", "--", "x"], "not both"),
])
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], expected: str) -> None:
    done = limbo("audit", *argv)
    assert done.returncode == 2
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_server_that_fails_to_start_is_one_line_with_its_stderr() -> None:
    done = limbo("audit", "--", "python", "-c",
                 "import sys; print('no database configured', file=sys.stderr); sys.exit(3)")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "cannot audit" in done.stderr and "no database configured" in done.stderr


def test_a_server_that_fails_to_list_its_tools_is_one_line(tmp_path) -> None:
    server = tmp_path / "broken_list.py"
    server.write_text(
        "import anyio\n"
        "from mcp.server.lowlevel import Server\n"
        "from mcp.server.stdio import stdio_server\n"
        "from mcp.shared.exceptions import MCPError\n"
        "async def list_tools(ctx, params):\n"
        "    raise MCPError(code=-32603, message='tool registry offline')\n"
        "async def main():\n"
        "    server = Server('broken', on_list_tools=list_tools)\n"
        "    async with stdio_server() as (r, w):\n"
        "        await server.run(r, w, server.create_initialization_options())\n"
        "anyio.run(main)\n")
    done = limbo("audit", "--", "python", str(server))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "cannot list its tools" in done.stderr and "tool registry offline" in done.stderr


def test_malformed_rules_name_the_file_and_field(tmp_path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("write_verbs: [create]\n")
    done = limbo("audit", "--rules", str(rules), "--", "python", "-c", "pass")
    assert done.returncode == 2
    assert str(rules) in done.stderr and "read_verbs" in done.stderr


# -- three servers nobody here wrote ---------------------------------------------------------------
@pytest.mark.slow
def test_audit_of_server_memory() -> None:
    status, document = audit_json([real_server("memory")])
    rows = {row["tool"]: row for row in document["tools"]}
    assert document["server"]["name"] == "memory-server"
    assert {n for n, r in rows.items() if r["writes"]} == {
        "create_entities", "create_relations", "add_observations", "delete_entities",
        "delete_observations", "delete_relations"}
    assert rows["create_entities"]["retry_safe"] is False  # idempotentHint=false, no key
    assert rows["create_entities"]["read_back"] == ["read_graph"]
    assert rows["delete_entities"]["retry_safe"] is True
    assert status == 0  # every unsafe write can be read back


@pytest.mark.slow
def test_audit_of_server_filesystem(tmp_path) -> None:
    status, document = audit_json([real_server("filesystem"), str(tmp_path)])
    rows = {row["tool"]: row for row in document["tools"]}
    assert rows["write_file"]["retry_safe"] and rows["create_directory"]["retry_safe"]
    assert not rows["edit_file"]["retry_safe"] and not rows["move_file"]["retry_safe"]
    assert rows["edit_file"]["verify"] is None  # no argument a read could be recognised by
    assert "read_text_file" in rows["edit_file"]["read_back"]
    assert status == 0


@pytest.mark.slow
def test_audit_of_mcp_server_sqlite(tmp_path) -> None:
    status, document = audit_json([real_server("sqlite"), "--db-path",
                                   str(tmp_path / "audit.db")])
    rows = {row["tool"]: row for row in document["tools"]}
    # no annotations at all: every verdict comes from names and descriptions
    assert rows["write_query"]["evidence"]["writes"] == "name: 'write' is a write verb"
    assert rows["read_query"]["writes"] is False
    assert rows["write_query"]["read_back"][0] == "read_query"
    assert document["server"]["unprotected_writes"] == ["append_insight"]
    assert status == 1


def test_a_proposed_read_back_finds_the_write_in_any_listed_collection() -> None:
    from limbo_plugin.readback import ANY_LIST, queries
    from limbo_plugin.spec.models import ReadBack

    tools = list(REGISTRY.catalog("native").tools.values())
    listed = [ListedTool(t.name, t.description, t.input_schema, t.annotations(), {})
              for t in tools]
    rows = {r.tool: r for r in Auditor(listed, load_rules()).audit()}
    verify = rows["tickets_create"].verify
    assert verify is not None and verify["tool"] == "tickets_list"
    assert verify["items"] == ANY_LIST and verify["args"] == {"project": "{project}"}
    (query,) = queries(ReadBack.model_validate(verify),
                       {"project": "OPS", "title": "Disk full", "description": "db-3"})
    assert query.arguments == {"project": "OPS"}
    listing: dict[str, Any] = {"tickets": [{"id": "T-1", "title": "Other", "description": "x"},
                           {"id": "T-2", "title": "Disk full", "description": "db-3"}],
               "next": None}
    assert query.find(listing) == listing["tickets"][1]
    assert query.find({"tickets": listing["tickets"][:1]}) is None


@pytest.mark.slow
def test_probe_checks_verdicts_and_verify_queries_on_the_server(memory, sqlite_db) -> None:
    """server-memory marks create_entities idempotentHint=false, yet a repeat changes nothing;
    sqlite's create_table verify query (a guess from names) does not find the table it made.
    Without --probe the audit says its verdicts come from the listing alone."""
    server, env = memory
    plain = limbo("audit", "--", *server, env=env)
    assert "verdicts from the listing alone" in plain.stdout
    _, document = audit_json_probe(server, env)
    row = {r["tool"]: r for r in document["tools"]}["create_entities"]
    assert row["idempotent"] is False  # the annotation's verdict stands, the probe's beside it
    assert row["probe"]["idempotent_observed"] is True
    assert "retry-safe in practice" in row["evidence"]["idempotent"]
    sqlite, _ = sqlite_db
    done = limbo("audit", "--json", "--probe", "--probe-args", "create_table",
                 '{"query": "CREATE TABLE t (x INTEGER)"}', "--", *sqlite)
    table = {r["tool"]: r for r in json.loads(done.stdout)["tools"]}["create_table"]
    assert table["probe"]["verify_finds"] is False and table["verify_checked"] is False


def audit_json_probe(command: list[str], env: dict[str, str]) -> tuple[int, dict]:
    done = limbo("audit", "--json", "--probe", "--", *command, env=env)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)
