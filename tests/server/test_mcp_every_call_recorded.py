"""Every call a harness makes over MCP is a recorded tool result, the same as in process.

Two kinds of call used to fall between the two: arguments over the sandbox service's body limit
came back as an MCP error (``-32603 … Broken pipe``) and were missing from the trace, and
arguments that are not a JSON object got the SDK's ``-32602``. An in-process agent gets an
``invalid_arguments`` tool error for both, traced and counted; so must a harness. Driven by a raw
JSON-RPC peer over stdio, so no client library tidies the requests first."""

from __future__ import annotations

import json
from typing import Any

import pytest
from serverkit import in_episode, raw_line, raw_session

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.server.launch import mcp_launch
from limbo_plugin.server.sandbox_http import shared_sandbox
from limbo_plugin.server.wire import MAX_BODY_BYTES

pytest.importorskip("mcp")

TICKET = {"project": "OPS", "title": "[SEV3] disk", "description": "d"}
CALLS: list[tuple[str, Any]] = [
    ("tickets_create", {**TICKET, "description": "x" * (2 * MAX_BODY_BYTES)}),   # ASCII
    ("tickets_create", {**TICKET, "description": "é" * 200_000}),  # 6 bytes each, escaped
    ("tickets_create", {**TICKET, "description": "\x01" * 190_000}),  # control characters
    ("wait", [5]),
    ("wait", 7),
    ("wait", "not json at all"),
    ("wait", '{"seconds": 3}'),                     # a JSON text: parsed, as in process
    ("tickets_create", TICKET),                    # and the episode goes on to its fault
]


def _over_mcp(session: AgentSession) -> list[dict[str, Any]]:
    with shared_sandbox().episode(session) as lease:
        requests = [raw_line({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}})
                    for n, (name, arguments) in enumerate(CALLS)]
        replies = raw_session(mcp_launch(lease.url, lease.token), requests,
                              expect_ids={10 + n for n in range(len(CALLS))}, in_turn=True)
        return [replies[10 + n] for n in range(len(CALLS))]


def _in_process(session: AgentSession) -> list[tuple[str, bool]]:
    return [(r.text(), r.is_error) for r in (session.call(n, a) for n, a in CALLS)]


def test_oversized_and_non_object_arguments_are_the_same_recorded_tool_errors() -> None:
    replies, remote = in_episode(_over_mcp)
    local_results, local = in_episode(_in_process)
    assert all("result" in reply for reply in replies), [r.get("error") for r in replies]
    results = [(r["result"]["content"][0]["text"], r["result"]["isError"]) for r in replies]
    assert results == local_results
    kinds = [json.loads(text).get("error", {}).get("type") for text, _ in results]
    assert kinds == ["invalid_arguments"] * 6 + [None, "timeout"]  # the episode's lost ack
    assert "too large" in results[0][0] and "not list" in results[3][0]
    assert remote.trace == local.trace
    assert remote.ledger == local.ledger
    assert remote.tool_calls == local.tool_calls == len(CALLS)
