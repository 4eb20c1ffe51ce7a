"""Every call a harness makes over MCP is a recorded tool result, the same as in process.

Calls of two kinds used to fall between the two: a call over the sandbox service's body limit
(by its arguments, or by a name of a megabyte), or with an empty name, came back as an MCP error
(``-32603``: a broken pipe, the service's 413 or 400) and was missing from the trace, and a call
whose arguments are not a JSON object, or whose name is not a string, got the SDK's ``-32602``.
An in-process agent gets an ``invalid_arguments`` or ``unknown_tool`` tool error for each, traced
and counted; so must a harness. Driven by a raw JSON-RPC peer over stdio, so no client library
tidies the requests first."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from hostile import FUZZ, JSON_LIKE
from hypothesis import given
from hypothesis import strategies as st
from serverkit import in_episode, mcp_post, raw_line, raw_session

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.records import EpisodeRecord
from limbo_plugin.server.launch import mcp_http_server, mcp_launch
from limbo_plugin.server.oversized import name_stand_in
from limbo_plugin.server.sandbox_http import shared_sandbox
from limbo_plugin.server.wire import MAX_BODY_BYTES, call_body
from limbo_plugin.toolapi import nesting_exceeds

pytest.importorskip("mcp")

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "prober", "version": "0"}}}
TICKET = {"project": "OPS", "title": "[SEV3] disk", "description": "d"}
CALLS: list[tuple[str, Any]] = [
    ("tickets_create", {**TICKET, "description": "x" * (2 * MAX_BODY_BYTES)}),   # ASCII
    ("tickets_create", {**TICKET, "description": "é" * 200_000}),  # 6 bytes each, escaped
    ("tickets_create", {**TICKET, "description": "\x01" * 190_000}),  # control characters
    ("wait", [5]),
    ("wait", 7),
    ("wait", "not json at all"),
    ("wait", '{"seconds": 3}'),                     # a JSON text: parsed, as in process
    ("tickets_create", json.dumps({**TICKET, "description": "y" * (2 * MAX_BODY_BYTES)})),
    ("tickets_create", TICKET),                    # and the episode goes on to its fault
]
NAMES: list[tuple[Any, Any]] = [
    ("n" * MAX_BODY_BYTES, {}),                     # a megabyte of name
    ("é" * 200_000 + "'", {"seconds": 1}),          # over the limit once escaped; repr quotes "
    (["tickets_create"] * 70_000, {}),              # no string, and over the limit
    ("x" * MAX_BODY_BYTES, {**TICKET, "description": "x" * (2 * MAX_BODY_BYTES)}),  # both
    (42, {}),
    ({"tool": "wait"}, {"seconds": 1}),
    (None, {}),
    ("", {}),
    ("tickets_create", TICKET),                    # and the episode goes on to its fault
]


def _over_mcp(calls: list[tuple[Any, Any]], session: AgentSession) -> list[dict[str, Any]]:
    with shared_sandbox().episode(session) as lease:
        requests = [raw_line({"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
                              "params": {"name": name, "arguments": arguments}})
                    for n, (name, arguments) in enumerate(calls)]
        replies = raw_session(mcp_launch(lease.url, lease.token), requests,
                              expect_ids={10 + n for n in range(len(calls))}, in_turn=True)
        return [replies[10 + n] for n in range(len(calls))]


def _in_process(calls: list[tuple[Any, Any]], session: AgentSession) -> list[tuple[str, bool]]:
    return [(r.text(), r.is_error) for r in (session.call(n, a) for n, a in calls)]


def _both_ways(calls: list[tuple[Any, Any]]
               ) -> tuple[list[tuple[str, bool]], EpisodeRecord, EpisodeRecord]:
    """The results over MCP, and the records of the episode over MCP and in process; the
    results are asserted to be those in process, byte for byte."""
    replies, remote = in_episode(partial(_over_mcp, calls))
    local_results, local = in_episode(partial(_in_process, calls))
    assert all("result" in reply for reply in replies), [r.get("error") for r in replies]
    results = [(r["result"]["content"][0]["text"], r["result"]["isError"]) for r in replies]
    assert results == local_results
    return results, remote, local


def _kinds(results: list[tuple[str, bool]]) -> list[str | None]:
    return [json.loads(text).get("error", {}).get("type") for text, _ in results]


def test_oversized_and_non_object_arguments_are_the_same_recorded_tool_errors() -> None:
    results, remote, local = _both_ways(CALLS)
    assert _kinds(results) == ["invalid_arguments"] * 6 + [None, "invalid_arguments",
                                                           "timeout"]  # the lost ack
    assert "too large" in results[0][0] and "not list" in results[3][0]
    assert isinstance(remote.trace[7].arguments, dict)  # an oversized JSON text, parsed
    assert remote.trace == local.trace
    assert remote.ledger == local.ledger
    assert remote.tool_calls == local.tool_calls == len(CALLS)


def test_oversized_and_non_string_names_are_the_same_recorded_unknown_tool_errors() -> None:
    results, remote, local = _both_ways(NAMES)
    assert _kinds(results) == ["unknown_tool"] * 8 + ["timeout"]
    assert repr(NAMES[0][0]) in results[0][0]  # the whole name, quoted back as in process
    assert remote.trace == local.trace
    assert max(len(entry.tool) for entry in remote.trace) == 200  # kept as in process
    assert remote.ledger == local.ledger
    assert remote.tool_calls == local.tool_calls == len(NAMES)


QUOTED = st.text(st.sampled_from("'\"\\a\né\U0001f600\ud800"), max_size=80)
"""Names whose ``repr`` depends on which quotes they hold, and escapes characters."""


@FUZZ
@given(name=st.one_of(JSON_LIKE, QUOTED, st.lists(QUOTED, max_size=4),
                      st.dictionaries(QUOTED, QUOTED, max_size=4)),
       budget=st.integers(min_value=0, max_value=60))
def test_a_stand_in_reads_as_its_name_for_as_long_as_a_trace_shows_it(name: Any,
                                                                       budget: int) -> None:
    """What a trace keeps of a name is cut from its ``repr``: a stand-in's reads the same for
    its budget, runs past it (so both are cut, and marked so, alike), and travels as JSON."""
    stand_in = name_stand_in(name, budget)
    if stand_in is name:
        return
    assert repr(stand_in)[:budget] == repr(name)[:budget]
    assert len(repr(stand_in)) > budget and len(repr(name)) > budget
    assert repr(json.loads(call_body(stand_in, {}))["name"]) == repr(stand_in)


def _nested(depth: int, bottom: Any = "bottom") -> Any:
    value = bottom
    for _ in range(depth):
        value = [value]
    return value


DEEP_ARGUMENTS = [150, 600, 20_000]
"""Arguments nested this many levels deep under ``"description"``: within the SDK parser's
limit (about 200 levels), beyond it, and far beyond it."""


def _deep_call_line(request_id: int, depth: int) -> bytes:
    """A ``tools/call`` whose description nests ``depth`` lists deep, written out as text:
    ``json.dumps`` itself cannot write it under the default recursion limit."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "tickets_create",
                                  "arguments": {**TICKET, "description": None}}})
    cut = head.index("null")
    text = head[:cut] + "[" * depth + '"bottom"' + "]" * depth + head[cut + len("null"):]
    return (text + "\n").encode()


def _deep_over_mcp(session: AgentSession) -> list[dict[str, Any]]:
    with shared_sandbox().episode(session) as lease:
        requests = [_deep_call_line(10 + n, depth) for n, depth in enumerate(DEEP_ARGUMENTS)]
        requests.append(raw_line({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                                  "params": {"name": "tickets_create", "arguments": TICKET}}))
        replies = raw_session(mcp_launch(lease.url, lease.token), requests,
                              expect_ids={10, 11, 12, 99}, in_turn=True)
        return [replies[request_id] for request_id in (10, 11, 12, 99)]


def _deep_in_process(session: AgentSession) -> list[tuple[str, bool]]:
    calls = [{**TICKET, "description": _nested(depth)} for depth in DEEP_ARGUMENTS]
    results = [session.call("tickets_create", arguments) for arguments in calls]
    results.append(session.call("tickets_create", TICKET))
    return [(result.text(), result.is_error) for result in results]


def test_arguments_nested_past_the_sdk_parser_are_answered_and_recorded_as_in_process() -> None:
    """The SDK's parser drops a line nested about 200 levels deep, so such a call went
    unanswered and its client waited for ever; now it is refused as in process, and the
    record is the in-process record."""
    replies, remote = in_episode(_deep_over_mcp)
    local_results, local = in_episode(_deep_in_process)
    assert all("result" in reply for reply in replies), [r.get("error") for r in replies]
    results = [(r["result"]["content"][0]["text"], r["result"]["isError"]) for r in replies]
    assert results == local_results
    assert _kinds(results) == ["invalid_arguments"] * 3 + ["timeout"]  # the lost ack
    assert all("levels deep" in text for text, _ in results[:3])
    assert remote.trace == local.trace
    assert remote.ledger == local.ledger


def test_a_name_nested_past_the_sdk_parser_is_answered_as_an_unknown_tool() -> None:
    line = ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": '
            + "[" * 1000 + "]" * 1000 + ', "arguments": {}}}\n').encode()

    def over_mcp(session: AgentSession) -> dict[str, Any]:
        with shared_sandbox().episode(session) as lease:
            return raw_session(mcp_launch(lease.url, lease.token), [line], {5})[5]

    reply, record = in_episode(over_mcp)
    assert reply["result"]["isError"] is True
    assert _kinds([(reply["result"]["content"][0]["text"], True)]) == ["unknown_tool"]
    assert record.tool_calls == 1


def test_in_process_arguments_too_deep_to_copy_are_refused_as_too_deep() -> None:
    """The session copies what an agent sends; arguments too deep to copy used to go on as
    their rendering, cut to a depth the world accepts, so the service checked another call
    than the one made (``[[[…]]] is not of type 'string'``)."""
    def call(session: AgentSession) -> Any:
        return session.call("tickets_create", {**TICKET, "description": _nested(5000)}).error

    error, record = in_episode(call)
    assert error == {"type": "invalid_arguments",
                     "message": "tickets_create: arguments nest more than 32 levels deep"}
    kept = record.trace[0].arguments  # the rendering, cut where a trace cuts
    assert kept["title"] == TICKET["title"] and "…" in json.dumps(kept, ensure_ascii=False)
    assert not nesting_exceeds(kept, 40)
    assert record.tool_calls == 1 and not record.ledger


def test_arguments_nested_past_the_sdk_parser_over_http_are_answered_as_in_process() -> None:
    """Over streamable HTTP the SDK answered such a body with a parse error (HTTP 400) that
    no episode recorded; without the token it is still refused, deep or not."""
    def over_http(session: AgentSession) -> dict[str, Any]:
        with shared_sandbox().episode(session) as lease, \
                mcp_http_server(lease.url, lease.token) as url:
            token = {"Authorization": f"Bearer {lease.token}"}
            deep = _deep_call_line(3, 600)
            seen: dict[str, Any] = {"no token": mcp_post(url, deep, {})[0]}
            status, headers, _ = mcp_post(url, raw_line(INITIALIZE), token)
            assert status == 200, status
            session_id = {"Mcp-Session-Id": headers["mcp-session-id"]}
            mcp_post(url, raw_line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                  {**token, **session_id})
            status, _, text = mcp_post(url, deep, {**token, **session_id})
            seen["deep"] = status, json.loads(text.split("data: ", 1)[1])
            return seen

    seen, remote = in_episode(over_http)
    local_results, local = in_episode(_deep_in_process)
    assert seen["no token"] == 401
    status, reply = seen["deep"]
    assert status == 200 and reply["id"] == 3
    assert reply["result"]["content"][0]["text"] == local_results[1][0]
    recorded = [(e.tool, e.arguments, e.response, e.is_error) for e in remote.trace]
    assert recorded == [(e.tool, e.arguments, e.response, e.is_error) for e in local.trace[1:2]]


def _at_stack_depth(frames: int, work: Any) -> Any:
    """``work()`` called ``frames`` Python frames deeper than here."""
    return work() if frames == 0 else _at_stack_depth(frames - 1, work)


@pytest.mark.parametrize("depth", [150, 950, 5000])
def test_a_json_text_of_arguments_gets_the_same_answer_however_deep_the_callers_stack(
        depth: int) -> None:
    """Python's JSON parser recurses, and on 3.11 how deep it gets depends on the caller's
    stack: a text nested 950 levels parsed near the top of a stack and failed 300 frames down
    (a scaffold's, a server thread's, an xdist worker's), with another error and another trace.
    """
    text = json.dumps({**TICKET, "description": None}).replace("null", "[" * depth + "]" * depth)

    def call(session: AgentSession, frames: int) -> Any:
        result = _at_stack_depth(frames, lambda: session.call("tickets_create", text))
        return result.error

    shallow, near = in_episode(partial(call, frames=0))
    deep, far = in_episode(partial(call, frames=300))
    assert shallow == deep and shallow is not None
    assert shallow["message"] == "tickets_create: arguments nest more than 32 levels deep"
    assert near.trace == far.trace
