"""An upstream stdio server whose answer nests past the MCP SDK's parser: the call fails at once
with an error that says so, instead of waiting out the client's two-minute read timeout.

The server here is a stub that answers ``deep`` with a result nested 400 levels deep (the
SDK's parser gives up at about 200) and ``flat`` with an ordinary one. It runs as a real
subprocess behind the SDK's real stdio client, through ``limbo proxy`` and ``limbo guard`` as a
user runs them.

Such a failed forward also shows how the proxy's faults treat a failure: a lost answer is lost
whatever it was, a redelivered call is delivered twice whatever the first copy's answer, and a
copy nobody awaits does not end the proxy's session.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

from limbo_plugin.realmcp.deep_answers import UNREADABLE_ANSWER, error_in_place, too_deep_answer
from limbo_plugin.realmcp.upstream import Upstream, UpstreamError, call_tool, connect, list_tools

pytest.importorskip("mcp")

HANG_LIMIT_S = 60.0
"""The client's read timeout here: long enough for a slow machine, far below the SDK's
two minutes; a test that waited it out failed (the message would name the timeout)."""

STUB = r'''
import json, sys

DEEP = "[" * 400 + "]" * 400

def answer(message_id, result_text):
    sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(message_id) + ', "result": '
                     + result_text + '}\n')
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if message_id is None:
        continue  # a notification
    if method == "initialize":
        answer(message_id, json.dumps({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}}, "serverInfo": {"name": "deep-stub", "version": "1"}}))
    elif method == "tools/list":
        schema = {"type": "object", "properties": {}}
        answer(message_id, json.dumps({"tools": [
            {"name": "deep", "description": "Answers nested deep.", "inputSchema": schema},
            {"name": "flat", "description": "Answers plainly.", "inputSchema": schema}]}))
    elif method == "tools/call" and message["params"]["name"] == "deep":
        answer(message_id, '{"content": [{"type": "text", "text": "done"}], '
                           '"structuredContent": {"value": ' + DEEP + '}}')
    elif method == "tools/call":
        answer(message_id, '{"content": [{"type": "text", "text": "flat done"}]}')
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "error": {
            "code": -32601, "message": "no such method"}}) + "\n")
        sys.stdout.flush()
'''


@pytest.fixture
def stub(tmp_path: Path) -> list[str]:
    script = tmp_path / "deep_stub.py"
    script.write_text(STUB, encoding="utf-8")
    return [sys.executable, str(script)]


def test_a_deep_answer_fails_its_call_at_once_and_the_session_goes_on(stub: list[str]) -> None:
    upstream = Upstream(command=tuple(stub))

    async def main() -> tuple[str, Any, list[str]]:
        async with connect(upstream, timeout_s=HANG_LIMIT_S) as client:
            names = [tool.name for tool in await list_tools(client, upstream)]
            with pytest.raises(UpstreamError) as failed:
                await call_tool(client, upstream, "deep", {})
            after = await call_tool(client, upstream, "flat", {})
            return str(failed.value), after, names

    message, after, names = anyio.run(main)
    assert names == ["deep", "flat"]
    assert "calling deep" in message and UNREADABLE_ANSWER in message, message
    assert "may have taken effect" in message
    assert not after.is_error and after.content[0].text == "flat done"


def call_through(front: list[str], tool: str, errlog: Any) -> str:
    """What the agent is told of a call through ``front``: a tool error's text, or the JSON-RPC
    error's message (the proxy passes a failed forward on as one). ``front``'s stderr goes to
    ``errlog``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    async def main() -> str:
        parameters = StdioServerParameters(command=front[0], args=front[1:])
        async with Client(stdio_client(parameters, errlog=errlog),
                          read_timeout_seconds=HANG_LIMIT_S * 2) as client:
            try:
                result = await client.call_tool(tool, {})
            except MCPError as error:
                return f"JSON-RPC error: {error}"
            text = " ".join(getattr(block, "text", "") for block in result.content)
            return f"tool error: {text}" if result.is_error else f"result: {text}"

    return anyio.run(main)


@pytest.mark.parametrize("command", [["proxy", "--inject", "timeout_post"], ["guard"]],
                         ids=["proxy", "guard"])
def test_through_proxy_and_guard_the_agent_is_told_the_answer_was_unreadable(
        command: list[str], stub: list[str], tmp_path: Path) -> None:
    extra = ["--log", str(tmp_path / "proxy.jsonl")] if command[0] == "proxy" else []
    if command[0] == "proxy":  # forwarded as it is: a read, which the proxy never faults
        config = tmp_path / "reads.yaml"
        config.write_text("tools:\n  - tool: deep\n    writes: false\n", encoding="utf-8")
        extra += ["--config", str(config)]
    front = [sys.executable, "-m", "limbo_plugin.cli", *command, *extra, "--", *stub]
    with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errlog:
        told = call_through(front, "deep", errlog)
        errlog.seek(0)
        stderr = errlog.read()
    assert "Traceback" not in stderr, stderr  # the SDK's own log of the parse error is dropped
    assert told.startswith("JSON-RPC error" if command[0] == "proxy" else "tool error"), told
    assert "nests more than" in told and "may have taken effect" in told, told
    assert "could not be forwarded" not in told  # it was forwarded, and answered
    if command[0] == "proxy":
        entries = [json.loads(line) for line in
                   (tmp_path / "proxy.jsonl").read_text(encoding="utf-8").splitlines()]
        calls = [e for e in entries if e.get("tool") == "deep"]
        assert calls and calls[-1]["server"]["is_error"], calls
        assert "nests more than" in calls[-1]["server"]["failed"]


def test_only_a_too_deep_answer_is_replaced() -> None:
    from mcp import types

    def parse_error(line: str) -> BaseException:
        try:
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as error:
            return error
        raise AssertionError(f"{line[:40]} parsed")

    deep = "[" * 400 + "]" * 400
    answer = parse_error('{"jsonrpc": "2.0", "id": 7, "result": {"x": ' + deep + "}}")
    assert too_deep_answer(answer) == 7
    replaced = error_in_place(answer)
    assert replaced.message.id == 7 and replaced.message.error.message == UNREADABLE_ANSWER
    request = parse_error('{"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", '
                          '"params": ' + deep + "}")
    broken = parse_error('{"jsonrpc": "2.0", "id": 4, "result": {')
    for error in (request, broken, RuntimeError("closed")):
        assert too_deep_answer(error) is None and error_in_place(error) is error
    assert isinstance(broken, pydantic.ValidationError)


def test_a_late_copy_whose_answer_fails_does_not_end_the_proxy(stub: list[str],
                                                               tmp_path: Path) -> None:
    """``timeout_late`` forwards the call after the agent was told it timed out; nobody awaits
    that copy's answer. Its failure (here, an answer too deep to read) is logged, and the
    proxy serves the next call; it used to end the proxy's session."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    config = tmp_path / "writes.yaml"
    config.write_text("tools:\n  - tool: deep\n    writes: true\n"
                      "  - tool: flat\n    writes: false\n", encoding="utf-8")
    log = tmp_path / "proxy.jsonl"
    front = [sys.executable, "-m", "limbo_plugin.cli", "proxy", "--inject", "timeout_late",
             "--late-delay", "0", "--config", str(config), "--log", str(log), "--", *stub]

    def late_entries() -> list[dict[str, Any]]:
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [e for e in map(json.loads, lines) if e.get("delivery") == "late"]

    async def main() -> tuple[Any, Any]:
        parameters = StdioServerParameters(command=front[0], args=front[1:])
        async with Client(stdio_client(parameters),
                          read_timeout_seconds=HANG_LIMIT_S) as client:
            faulted = await client.call_tool("deep", {})
            with anyio.fail_after(HANG_LIMIT_S):  # the late copy's answer is logged
                while not late_entries():
                    await anyio.sleep(0.05)
            return faulted, await client.call_tool("flat", {})

    faulted, after = anyio.run(main)
    assert faulted.is_error  # the injected timeout
    assert not after.is_error and after.content[0].text == "flat done"
    late = late_entries()[0]
    assert late["forwarded"] and late["server"]["is_error"]
    assert "nests more than" in late["server"]["failed"]


def test_a_forwarded_call_refused_mid_session_names_the_status(tmp_path: Path) -> None:
    """Over HTTP, a token that expires mid-session: the agent behind ``limbo proxy`` is told
    the status and what to check, as the guard's agent is, and neither the token nor the
    server's address."""
    from realkit import mcp_stub

    token = "proxy-mid-session-token-51ac"
    config = tmp_path / "reads.yaml"  # forwarded as it is: a read, which is never faulted
    config.write_text("tools:\n  - tool: echo\n    writes: false\n", encoding="utf-8")
    with mcp_stub(token=token, refuse={"tools/call": 401}) as url:
        front = [sys.executable, "-m", "limbo_plugin.cli", "proxy", "--inject", "timeout_post",
                 "--config", str(config), "--log", str(tmp_path / "proxy.jsonl"), "--url", url,
                 "--header", f"Authorization: Bearer {token}"]
        with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errlog:
            told = call_through(front, "echo", errlog)
    assert told.startswith("JSON-RPC error: calling echo: answered HTTP 401 Unauthorized: "
                           "it refused the Authorization header given"), told
    assert token not in told and url not in told
    entries = (tmp_path / "proxy.jsonl").read_text(encoding="utf-8")
    assert "answered HTTP 401" in entries and token not in entries


def proxy_through(stub: list[str], tmp_path: Path, mode: str, *extra: str
                  ) -> tuple[list[str], Path]:
    """``limbo proxy --inject mode`` on the stub, with ``deep`` a write and ``flat`` none."""
    config = tmp_path / "writes.yaml"
    config.write_text("tools:\n  - tool: deep\n    writes: true\n"
                      "  - tool: flat\n    writes: false\n", encoding="utf-8")
    log = tmp_path / f"{mode}.jsonl"
    return ([sys.executable, "-m", "limbo_plugin.cli", "proxy", "--inject", mode, *extra,
             "--config", str(config), "--log", str(log), "--", *stub], log)


def logged(log: Path, delivery: str) -> list[dict[str, Any]]:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [e for e in map(json.loads, lines) if e.get("delivery") == delivery]


@pytest.mark.parametrize("mode", ["timeout_post", "http500_post"])
def test_a_lost_answer_is_lost_even_when_it_is_a_failure(mode: str, stub: list[str],
                                                        tmp_path: Path) -> None:
    """The server's answer never reaches the client under these modes: a failure (here, an
    answer too deep to read) is lost too. The client sees the injected fault, as the log
    says; it used to see the failure while the log said it saw the fault."""
    front, log = proxy_through(stub, tmp_path, mode)
    with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errlog:
        told = call_through(front, "deep", errlog)
    assert told.startswith("tool error: "), told
    assert "nests more than" not in told, told
    entry = logged(log, "original")[0]
    assert entry["client_saw"] == ("timeout" if mode == "timeout_post" else "http 500")
    assert entry["server"]["is_error"] and "nests more than" in entry["server"]["failed"]


def test_a_redelivered_call_is_delivered_twice_even_when_the_first_answer_fails(
        stub: list[str], tmp_path: Path) -> None:
    """A transport that redelivers does so whatever the first copy's answer was: the client
    sees that answer (here a failure) and the server still gets the second copy."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    front, log = proxy_through(stub, tmp_path, "redelivery", "--redelivery-after", "0")

    async def main() -> str:
        parameters = StdioServerParameters(command=front[0], args=front[1:])
        async with Client(stdio_client(parameters),
                          read_timeout_seconds=HANG_LIMIT_S) as client:
            try:
                await client.call_tool("deep", {})
                told = "no error"
            except MCPError as error:
                told = str(error)
            with anyio.fail_after(HANG_LIMIT_S):  # the second copy's answer is logged
                while not logged(log, "redelivery"):
                    await anyio.sleep(0.05)
            return told

    told = anyio.run(main)
    assert "nests more than" in told, told
    second = logged(log, "redelivery")[0]
    assert second["forwarded"] and second["tool"] == "deep"
