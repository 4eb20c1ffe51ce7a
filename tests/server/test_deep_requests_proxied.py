"""``limbo proxy`` and ``limbo guard``, on stdio and over HTTP, answer a request nested past
the MCP SDK's parser with a JSON-RPC error of its id, and forward nothing of it.

The SDK drops such a line unanswered on stdio, so the client used to wait for ever, and over
HTTP answers a parse error of no id. ``limbo mcp`` answers it as the call it is
(``test_mcp_every_call_recorded``); a proxy or a guard must not: emptied below the parser's
limit it would be another call than the one made, sent to a real server. Here the real server
is ``limbo mcp`` in an episode, whose record shows what reached it."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from serverkit import in_episode, mcp_post, raw_line, raw_session

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.server.launch import mcp_launch, serving_http
from limbo_plugin.server.sandbox_http import shared_sandbox

pytest.importorskip("mcp")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "prober", "version": "0"}}}
DEEP_CALL = ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wait", '
             '"arguments": {"seconds": ' + "[" * 400 + "]" * 400 + '}}}\n').encode()
DEEP_NOTIFICATION = ('{"jsonrpc": "2.0", "method": "notifications/progress", "params": '
                     + "[" * 400 + "]" * 400 + "}\n").encode()


@pytest.mark.parametrize("command", [["proxy", "--inject", "timeout_post"], ["guard"]],
                         ids=["proxy", "guard"])
def test_a_request_too_deep_to_read_is_refused_with_its_id_and_not_forwarded(
        command: list[str], tmp_path: Path) -> None:
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []

    def through(session: AgentSession) -> dict[int, Any]:
        with shared_sandbox().episode(session) as lease:
            server = mcp_launch(lease.url, lease.token)
            front = dataclasses.replace(
                server, command=sys.executable,
                args=("-m", "limbo_plugin.cli", *command, *extra, "--", *server.argv))
            listing = raw_line({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
            return raw_session(front, [DEEP_NOTIFICATION, DEEP_CALL, listing], {7, 8})

    replies, record = in_episode(through)
    error = replies[7]["error"]
    assert error["code"] == -32600, error
    assert "nests more than 128 levels deep" in error["message"]
    assert "not forwarded" in error["message"]
    assert "wait" in [tool["name"] for tool in replies[8]["result"]["tools"]]
    assert record.tool_calls == 0 and record.trace == []  # nothing reached the server


@pytest.mark.parametrize("command", [["proxy", "--inject", "timeout_post"], ["guard"]],
                         ids=["proxy", "guard"])
def test_over_http_a_request_too_deep_to_read_is_refused_with_its_id(
        command: list[str], tmp_path: Path) -> None:
    """Over streamable HTTP the SDK answered such a body with a parse error of no id."""
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []

    def through(session: AgentSession) -> tuple[int, dict[str, Any]]:
        with shared_sandbox().episode(session) as lease:
            server = mcp_launch(lease.url, lease.token)
            argv = [sys.executable, "-m", "limbo_plugin.cli", *command, *extra,
                    "--transport", "streamable-http", "--no-token", "--", *server.argv]
            env = {**os.environ, **server.env}
            with serving_http(argv, env, label=f"limbo {command[0]}") as url:
                status, headers, _ = mcp_post(url, raw_line(INITIALIZE), {})
                assert status == 200, status
                session_id = {"Mcp-Session-Id": headers["mcp-session-id"]}
                mcp_post(url, raw_line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                         session_id)
                status, _, text = mcp_post(url, DEEP_CALL, session_id)
                return status, json.loads(text.split("data: ", 1)[-1])

    (status, reply), record = in_episode(through)
    assert status == 200 and reply["id"] == 7, reply
    assert reply["error"]["code"] == -32600
    assert "not forwarded" in reply["error"]["message"]
    assert record.tool_calls == 0 and record.trace == []
