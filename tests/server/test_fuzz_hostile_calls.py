"""Hostile tool calls against every tool: in-process (more than 10,000 calls), through the
sandbox HTTP service and through the MCP server.

The properties, for every call: no exception escapes the world; the answer is JSON a record and
a wire can hold; a call the service refused (bad input, unknown tool or record, a conflict)
never commits an effect; and every episode's record serialises and reads back.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hostile import CATALOG, FUZZ, HUGE_TEXT, JSON_LIKE, is_rejection, tool_calls, wire_safe
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from serverkit import LATE, LOST_ACK, REGISTRY, in_episode, raw_line, raw_session, request

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.faults import FaultPlan, FaultTransport
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.server.launch import mcp_launch
from limbo_plugin.server.sandbox_http import shared_sandbox
from limbo_plugin.server.wire import CALL_PATH
from limbo_plugin.toolapi import ToolCall
from limbo_plugin.world.seeds import world_seed
from limbo_plugin.world.world import World

TOOLS = tuple(sorted(CATALOG.tools))
WORLDS = [
    EpisodeKey(template="hotfix_long", instance=0, focal_write="ticket", fault_mode="none"),
    EpisodeKey(template="subscription_upgrade", instance=0, focal_write="charge",
               fault_mode="timeout_post"),
    EpisodeKey(template="invoice_batch", instance=1, focal_write="charge_1",
               fault_mode="redelivery"),
    EpisodeKey(template="cross_post", instance=0, focal_write="post_x",
               fault_mode="timeout_late"),
    EpisodeKey(template="feature_flags", instance=0, focal_write="upsert",
               fault_mode="timeout_pre"),
    EpisodeKey(template="migration_log", instance=0, focal_write="batch",
               fault_mode="partial_batch"),
    EpisodeKey(template="deploy_release", instance=0, focal_write="deploy_staging",
               fault_mode="http500_post"),
]
"""Worlds whose services cover every tool (hotfix_long has five services, subscription_upgrade
billing and the database), under no fault and under faults of every way of executing."""
IN_PROCESS_CALLS = 10_000


def build(key: EpisodeKey) -> tuple[World, FaultTransport]:
    task = REGISTRY.template(key.template).instantiate(key.instance)
    world = World(CATALOG, task.services, base_seed=task.base_seed,
                  seed_records=task.seed_records)
    plan = None
    if key.fault_mode != "none":
        plan = FaultPlan(mode=REGISTRY.fault_mode(key.fault_mode),
                         trigger=task.focal(key.focal_write).trigger(),
                         world_seed=world_seed(key.template, key.instance, key.focal_write,
                                               key.fault_mode))
    return world, FaultTransport(world, plan)


@pytest.mark.early
@pytest.mark.slow
def test_more_than_ten_thousand_hostile_calls_in_process() -> None:
    seen: Counter[str] = Counter()
    totals: Counter[str] = Counter()

    @settings(FUZZ, max_examples=330)
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(WORLDS), label="world")
        world, transport = build(key)
        calls = data.draw(st.lists(tool_calls(tuple(sorted(world.tools))), min_size=30,
                                   max_size=40), label="calls")
        rejected: set[int] = set()
        for seq, (name, arguments) in enumerate(calls, start=1):
            result = transport.call(ToolCall(name=name, arguments=arguments, seq=seq))
            result.text().encode("utf-8")  # JSON, and text any wire can carry
            totals["calls"] += 1
            if isinstance(name, str) and name in world.tools:
                seen[name] += 1
            if is_rejection(result):
                rejected.add(seq)
                assert all(e.request_seq != seq for e in world.ledger.effects), (name, result)
        world.finish_in_flight()  # late commits and redeliveries land: still none of those
        assert not {e.request_seq for e in world.ledger.effects} & rejected
        totals["rejected"] += len(rejected)
        totals["effects"] += len(world.ledger.effects)

    run()
    print(f"in-process: {totals['calls']} hostile calls ({totals['rejected']} rejected, "
          f"{totals['effects']} effects committed), 0 escaped exceptions")
    assert totals["calls"] >= IN_PROCESS_CALLS
    assert set(seen) == set(TOOLS), f"never called: {set(TOOLS) - set(seen)}"
    assert min(seen.values()) >= 50, seen.most_common()[-3:]
    assert totals["effects"] > 100, "plausible calls get through and commit, too"


class Hostile:
    """An agent that sends the generated calls through the session, then finishes."""

    name = "hostile"

    def __init__(self, calls: list[tuple[Any, Any]]) -> None:
        self.calls = calls

    def run(self, session: AgentSession) -> None:
        for name, arguments in self.calls:
            session.call(name, arguments)


@FUZZ
@given(world=st.sampled_from([LOST_ACK, LATE, *WORLDS[1:]]),
       calls=st.lists(tool_calls(TOOLS), min_size=1, max_size=45))
def test_every_episode_of_hostile_calls_has_a_record_that_serialises(
        world: EpisodeKey, calls: list[tuple[Any, Any]]) -> None:
    from limbo_plugin.episode import run_episode
    from limbo_plugin.runconfig import RunConfig

    record = run_episode(world, RunConfig(contract="keys_everywhere"), registry=REGISTRY,
                         agent=Hostile(calls))
    assert record.error is None
    text = record.model_dump_json()
    assert EpisodeRecord.model_validate_json(text).model_dump_json() == text
    assert record.tool_calls == min(len(calls), 40) or record.final_status is not None


RAW_BODIES = st.one_of(
    st.binary(max_size=200), HUGE_TEXT.map(lambda text: text.encode("utf-8", "surrogatepass")),
    JSON_LIKE.map(lambda value: wire_safe(value).encode()),
    st.sampled_from([b"", b"null", b"{}", b'{"name": ""}', b'{"name": 5}',
                     b'{"name": "wait", "arguments": {"seconds": 1}, "extra": 1}',
                     b"[" * 10_000, b'{"name": "wait", "arguments": ' + b"[" * 3000 + b"}"]))


HTTP_CALLS = 1_000


def test_hostile_calls_through_the_sandbox_http_service() -> None:
    statuses: Counter[int] = Counter()

    @FUZZ
    @given(world=st.sampled_from([LOST_ACK, LATE]),
           calls=st.lists(st.one_of(tool_calls(TOOLS).map(lambda c: ("call", c)),
                                    RAW_BODIES.map(lambda b: ("raw", b))),
                          min_size=10, max_size=35))
    def run(world: EpisodeKey, calls: list[tuple[str, Any]]) -> None:
        def body(session: AgentSession) -> Any:
            with shared_sandbox().episode(session) as lease:
                for kind, payload in calls:
                    if kind == "call":
                        name, arguments = payload
                        raw = wire_safe({"name": name, "arguments": arguments}).encode()
                    else:
                        raw = payload
                    status, answer = request(lease.url, "POST", CALL_PATH, token=lease.token,
                                             raw=raw,
                                             headers={"Content-Type": "application/json"})
                    statuses[status] += 1
                    assert status in (200, 400, 413), (status, answer)
                    assert ("text" in answer) if status == 200 else ("error" in answer)
                assert lease.failure is None, "an exception escaped the episode"
                return request(lease.url, "GET", "/healthz")[0]

        health, record = in_episode(body, key=world)
        assert health == 200, "the service keeps serving"
        EpisodeRecord.model_validate_json(record.model_dump_json())

    run()
    sent = sum(statuses.values())
    print(f"sandbox HTTP: {sent} hostile requests (by status {dict(sorted(statuses.items()))}),"
          " 0 escaped exceptions")
    assert sent >= HTTP_CALLS
    assert statuses[200] and statuses[400], "both answered calls and refused bodies were sent"


def _rpc(request_id: int, name: Any, arguments: Any) -> bytes:
    return (wire_safe({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}) + "\n").encode()


def _serve_mcp(launch: Any, lines: list[tuple[int | None, bytes]],
               awaited: set[int]) -> dict[int, Any]:
    """Send ``lines`` to a fresh ``limbo mcp`` after the handshake, then a ``tools/list``
    sentinel; return every reply by id once the sentinel's and those of ``awaited`` are in (the
    server answers requests concurrently, so the sentinel may overtake a slow call)."""
    sentinel = 999_999
    requests = [line for _, line in lines]
    requests.append(raw_line({"jsonrpc": "2.0", "id": sentinel, "method": "tools/list"}))
    return raw_session(launch, requests, {sentinel, *awaited})


MCP_CALLS = 200


def _strict_json(line: bytes) -> bool:
    """Whether a strict JSON parser (the MCP SDK's) reads ``line``: no NaN or infinity, no lone
    surrogate. A line that is not JSON is dropped by the SDK's stdio transport, unanswered."""
    try:
        json.dumps(json.loads(line, parse_constant=_refuse), ensure_ascii=False).encode()
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def _refuse(constant: str) -> Any:
    raise ValueError(constant)


@pytest.mark.slow
def test_hostile_calls_through_the_mcp_server() -> None:
    sent: Counter[str] = Counter()

    # No shrinking: each example is a server process; a failure prints its calls as they are.
    @settings(FUZZ, max_examples=8, phases=[Phase.explicit, Phase.generate])
    @given(calls=st.lists(st.one_of(tool_calls(TOOLS).map(lambda c: ("call", c)),
                                    st.binary(max_size=80).map(lambda b: ("raw", b))),
                          min_size=25, max_size=35))
    def run(calls: list[tuple[str, Any]]) -> None:
        lines: list[tuple[int | None, bytes]] = []
        for request_id, (kind, payload) in enumerate(calls, start=1):
            if kind == "call":
                lines.append((request_id, _rpc(request_id, *payload)))
            else:
                lines.append((None, payload.replace(b"\n", b" ") + b"\n"))
        awaited = {request_id for request_id, line in lines
                   if request_id is not None and _strict_json(line)}

        def body(session: AgentSession) -> Any:
            with shared_sandbox().episode(session) as lease:
                replies = _serve_mcp(mcp_launch(lease.url, lease.token), lines, awaited)
                assert lease.failure is None, "an exception escaped the episode"
                return replies

        replies, record = in_episode(body)
        for request_id in awaited:
            reply = replies[request_id]
            assert "result" in reply or isinstance(reply["error"]["code"], int)
        assert "result" in replies[999_999], "the server still answers after all of that"
        EpisodeRecord.model_validate_json(record.model_dump_json())
        sent["lines"] += len(lines)
        sent["answered"] += len(awaited)

    run()
    print(f"MCP: {sent['lines']} hostile lines ({sent['answered']} tools/call requests "
          "answered), 0 escaped exceptions")
    assert sent["lines"] >= MCP_CALLS
