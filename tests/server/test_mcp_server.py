"""``limbo mcp``: the real MCP server process, driven by the official SDK client, a raw JSON-RPC
peer and the MCP Inspector CLI. It lists the contract, forwards calls byte for byte, refuses a
wrong token with an MCP error, and survives malformed requests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from serverkit import LOST_ACK, http_client, in_episode, over_stdio, raw_line, raw_session

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.launch import mcp_http_server, mcp_launch
from limbo_plugin.server.sandbox_http import shared_sandbox
from limbo_plugin.server.wire import TOKEN_ENV, tool_wire
from limbo_plugin.spec.registry import SpecRegistry

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


def _listed(tools: Any) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "inputSchema": t.input_schema,
             "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)}
            for t in tools]


@pytest.mark.parametrize("contract", ["native", "keys_everywhere"])
def test_tools_list_is_the_contract_under_every_documentation_variant(
        contract: str, registry: SpecRegistry) -> None:
    for docs in registry.docs:
        def body(session: AgentSession) -> Any:
            with shared_sandbox().episode(session) as lease:
                async def work(client: Any) -> Any:
                    return (await client.list_tools()).tools

                return _listed(over_stdio(mcp_launch(lease.url, lease.token), work))

        listed, _ = in_episode(body, config=RunConfig(contract=contract, docs=docs))
        task = registry.template(LOST_ACK.template).instantiate(0)
        expected = [tool_wire(t) for t in
                    registry.catalog(contract, docs).for_services(task.services)]
        assert listed == json.loads(json.dumps(expected)), (contract, docs)


def test_tools_call_returns_the_scaffolds_text_and_is_error() -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("tickets_create", {"project": "OPS", "title": "[SEV3] x", "description": "y"}),
        ("tickets_list", {"project": "OPS"}),
        ("wait", {"seconds": "soon"}),            # fails validation
        ("no_such_tool", {}),                     # unknown tool
        ("tickets_get", {"ticket_id": "OPS-0"}),  # unknown record: a 404 tool error
    ]

    def over_mcp(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            async def work(client: Any) -> Any:
                results = []
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    assert len(result.content) == 1 and result.structured_content is None
                    results.append((result.content[0].text, result.is_error))
                return results

            return over_stdio(mcp_launch(lease.url, lease.token), work)

    def in_process(session: AgentSession) -> Any:
        return [(r.text(), r.is_error) for r in (session.call(n, a) for n, a in calls)]

    remote, remote_record = in_episode(over_mcp)
    local, local_record = in_episode(in_process)
    assert remote == local
    assert [flag for _, flag in remote] == [True, False, True, True, True]  # the timeout first
    assert remote_record.trace == local_record.trace
    assert remote_record.ledger == local_record.ledger


def test_a_wrong_token_is_an_mcp_error_not_a_tool_result_and_not_a_crash() -> None:
    from mcp.shared.exceptions import MCPError

    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            launch = mcp_launch(lease.url, "an-old-episodes-token")

            async def work(client: Any) -> Any:
                errors = []
                for _ in range(2):  # the second round shows the first did not kill it
                    with pytest.raises(MCPError) as listing:
                        await client.list_tools()
                    errors.append(str(listing.value))
                    with pytest.raises(MCPError) as calling:
                        await client.call_tool("wait", {"seconds": 1})
                    errors.append(str(calling.value))
                return errors

            return over_stdio(launch, work)

    errors, record = in_episode(body)
    assert all("401" in e for e in errors), errors
    assert record.tool_calls == 0


def test_malformed_json_rpc_gets_errors_and_the_server_keeps_serving() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            launch = mcp_launch(lease.url, lease.token)
            return raw_session(launch, [
                b"this is not json\n",
                raw_line({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}),
                raw_line({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "wait", "arguments": [5]}}),
                raw_line({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"arguments": {"seconds": 1}}}),
                raw_line({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": {"name": "wait", "arguments": {"seconds": 4}}}),
                raw_line({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}),
            ], expect_ids={2, 3, 4, 5, 6})

    replies, record = in_episode(body)
    for request_id in (2, 4):  # no such method; no tool name
        assert "error" in replies[request_id], replies[request_id]
        assert isinstance(replies[request_id]["error"]["code"], int)
    # arguments that are not an object are the agent's mistake: a tool error, as in process
    assert replies[3]["result"]["isError"] is True
    assert "invalid_arguments" in replies[3]["result"]["content"][0]["text"]
    assert replies[5]["result"]["isError"] is False
    assert "waited_s" in replies[5]["result"]["content"][0]["text"]
    listed = [t["name"] for t in replies[6]["result"]["tools"]]
    assert listed == [t.name for t in _session_tools()]  # the session's tools, from the specs
    assert [e.tool for e in record.trace] == ["wait", "wait"]
    assert record.sim_seconds == 4 + 1  # the refused call cost its second, as in process


def test_streamable_http_transport_serves_the_same_tools() -> None:
    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease, \
                mcp_http_server(lease.url, lease.token) as url:
            async def main() -> Any:
                async with http_client(url, lease.token) as client:
                    tools = (await client.list_tools()).tools
                    result = await client.call_tool("wait", {"seconds": 9})
                    return _listed(tools), result.content[0].text, result.is_error

            return url, anyio.run(main)

    (url, (tools, text, is_error)), record = in_episode(body)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert [t["name"] for t in tools] == [t.name for t in _session_tools()]
    assert text == '{"now":"2026-09-15T09:00:09Z","waited_s":9}' and is_error is False
    assert record.sim_seconds == 9


@pytest.mark.parametrize(("args", "env", "message"), [
    ([], {}, "--url"),
    (["--url", "http://127.0.0.1:9"], {}, "--token"),
    (["--url", "ftp://x", "--token", "t"], {}, "http://host:port"),
])
def test_limbo_mcp_usage_errors_are_oneraw_line(args: list[str], env: dict[str, str],
                                            message: str) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LIMBO_SANDBOX")}
    result = subprocess.run([sys.executable, "-m", "limbo_plugin.cli", "mcp", *args],
                            capture_output=True, text=True, env={**clean, **env}, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("limbo mcp: ") and message in lines[0]


def test_the_mcp_inspector_cli_lists_and_calls_the_tools() -> None:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed: cannot run the MCP Inspector CLI")

    def body(session: AgentSession) -> Any:
        with shared_sandbox().episode(session) as lease:
            launch = mcp_launch(lease.url, lease.token)
            env_args = [arg for k, v in launch.env.items() for arg in ("-e", f"{k}={v}")]
            outputs = []
            for method in (["--method", "tools/list"],
                           ["--method", "tools/call", "--tool-name", "wait",
                            "--tool-arg", "seconds=5"]):
                result = subprocess.run([npx, "--yes", INSPECTOR, "--cli", *env_args,
                                         launch.command, *launch.args, *method],
                                        capture_output=True, text=True, timeout=600)
                outputs.append(result)
            return outputs

    (listing, call), record = in_episode(body)
    if listing.returncode != 0 and "ERR!" in listing.stderr:
        pytest.skip(f"cannot fetch {INSPECTOR} with npx: {listing.stderr.strip()[-200:]}")
    assert listing.returncode == 0, listing.stderr
    names = [t["name"] for t in json.loads(listing.stdout)["tools"]]
    assert names == [t.name for t in _session_tools()]
    assert call.returncode == 0, call.stderr
    reply = json.loads(call.stdout)
    assert reply["isError"] is False
    assert json.loads(reply["content"][0]["text"]) == {"now": "2026-09-15T09:00:05Z",
                                                       "waited_s": 5}
    assert [(e.tool, e.arguments) for e in record.trace] == [("wait", {"seconds": 5})]
    assert TOKEN_ENV not in listing.stdout + call.stdout


def _session_tools() -> Any:
    from serverkit import REGISTRY as registry

    task = registry.template(LOST_ACK.template).instantiate(0)
    return registry.catalog().for_services(task.services)


def test_the_token_travels_in_the_environment_never_on_the_commandraw_line() -> None:
    launch = mcp_launch("http://127.0.0.1:1234", "s3cret-token")
    assert all("s3cret-token" not in arg for arg in launch.argv)
    assert launch.env[TOKEN_ENV] == "s3cret-token"
    assert launch.command == sys.executable  # this interpreter, whatever is on PATH
    package_root = str(Path(__file__).resolve().parents[2])  # this copy of limbo_plugin
    assert launch.env["PYTHONPATH"].split(os.pathsep)[0] == package_root
