"""The sandbox service: only the episode's tools, only with the episode's token, nothing secret,
and a malformed request never takes it down."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from serverkit import LATE, LOST_ACK, in_episode, request

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.agents.scripted import _render_lenient
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.sandbox_http import SandboxServer
from limbo_plugin.server.wire import CALL_PATH, TOOLS_PATH, tool_wire
from limbo_plugin.spec.registry import SpecRegistry


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxServer]:
    with SandboxServer() as server:
        yield server


def test_lists_exactly_the_episodes_tools_under_every_contract_and_docs_variant(
        sandbox: SandboxServer, registry: SpecRegistry) -> None:
    seen_descriptions = set()
    for contract in registry.contracts:
        for docs in registry.docs:
            def body(session: AgentSession) -> Any:
                with sandbox.episode(session) as lease:
                    return request(lease.url, "GET", TOOLS_PATH, token=lease.token)

            (status, listing), _ = in_episode(
                body, config=RunConfig(contract=contract, docs=docs))
            assert status == 200
            task = registry.template("incident_open").instantiate(0)
            expected = [tool_wire(t) for t in
                        registry.catalog(contract, docs).for_services(task.services)]
            assert listing == {"tools": json.loads(json.dumps(expected))}, (contract, docs)
            by_name = {t["name"]: t for t in listing["tools"]}
            assert set(by_name["tickets_create"]["annotations"]) >= {
                "readOnlyHint", "idempotentHint", "destructiveHint"}
            assert by_name["tickets_list"]["annotations"]["readOnlyHint"] is True
            assert by_name["tickets_create"]["annotations"]["idempotentHint"] is False
            keyed = "idempotency_key" in by_name["tickets_create"]["inputSchema"]["properties"]
            assert keyed == (contract == "keys_everywhere")
            seen_descriptions.add(by_name["tickets_list"]["description"])
    # the variants really differ in what the agent is told
    assert len(seen_descriptions) >= 2


def test_a_call_goes_through_the_session_and_returns_the_canonical_text(
        sandbox: SandboxServer) -> None:
    def body(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            return request(lease.url, "POST", CALL_PATH, token=lease.token,
                           body={"name": "wait", "arguments": {"seconds": 7}})

    (status, reply), record = in_episode(body)
    assert status == 200
    assert reply["isError"] is False
    assert reply["text"] == json.dumps(record.trace[0].response, sort_keys=True,
                                       separators=(",", ":"), ensure_ascii=False)
    assert [(e.tool, e.arguments) for e in record.trace] == [("wait", {"seconds": 7})]
    assert record.sim_seconds == 7


def test_tokens_are_per_episode_and_revoked_when_it_ends(sandbox: SandboxServer) -> None:
    old: dict[str, str] = {}

    def first(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            old["token"] = lease.token
            return request(lease.url, "GET", TOOLS_PATH, token=lease.token)[0]

    def second(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            assert lease.token != old["token"]
            url = lease.url
            return {
                "none": request(url, "GET", TOOLS_PATH)[0],
                "wrong": request(url, "GET", TOOLS_PATH, token="not-a-token")[0],
                "old": request(url, "POST", CALL_PATH, token=old["token"],
                               body={"name": "wait", "arguments": {"seconds": 1}}),
                "basic": request(url, "GET", TOOLS_PATH,
                                 headers={"Authorization": f"Basic {lease.token}"})[0],
                "own": request(url, "GET", TOOLS_PATH, token=lease.token)[0],
            }

    assert in_episode(first)[0] == 200
    seen, record = in_episode(second)
    assert seen["none"] == seen["wrong"] == seen["basic"] == 401
    status, body = seen["old"]
    assert status == 401 and body["error"]["type"] == "unauthorized"
    assert seen["own"] == 200
    assert record.tool_calls == 0  # the refused call never reached the episode


def test_malformed_requests_get_json_errors_and_the_server_keeps_serving(
        sandbox: SandboxServer) -> None:
    def body(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            url, token = lease.url, lease.token
            answers = {
                "not json": request(url, "POST", CALL_PATH, token=token, raw=b"{nope"),
                "not an object": request(url, "POST", CALL_PATH, token=token, body=[1, 2]),
                "no name": request(url, "POST", CALL_PATH, token=token, body={"arguments": {}}),
                "extra field": request(url, "POST", CALL_PATH, token=token,
                                       body={"name": "wait", "ledger": True}),
                "unknown path": request(url, "GET", "/v1/ledger", token=token),
                "wrong method": request(url, "POST", TOOLS_PATH, token=token, body={}),
            }
            garbage = _raw_exchange(url, b"THIS IS NOT HTTP\r\n\r\n")
            too_large = _raw_exchange(url, f"POST {CALL_PATH} HTTP/1.1\r\nHost: x\r\n"
                                      f"Authorization: Bearer {token}\r\n"
                                      "Content-Length: 2000001\r\n\r\n{".encode())
            answers["after"] = request(url, "POST", CALL_PATH, token=token,
                                       body={"name": "wait", "arguments": {"seconds": 2}})
            return answers, garbage, too_large

    (answers, garbage, too_large), record = in_episode(body)
    expected = {"not json": 400, "not an object": 400, "no name": 400, "extra field": 400,
                "unknown path": 404, "wrong method": 405}
    for name, status in expected.items():
        got, reply = answers[name]
        assert got == status, name
        assert isinstance(reply["error"]["message"], str) and reply["error"]["message"], name
    assert garbage.startswith(b"HTTP/1.1 400") and b'"error"' in garbage
    assert too_large.startswith(b"HTTP/1.1 413") and b'"too_large"' in too_large
    assert answers["after"][0] == 200 and answers["after"][1]["isError"] is False
    assert record.tool_calls == 1  # only the well-formed call reached the episode


def test_malformed_names_and_arguments_are_the_agents_mistake_a_tool_error_as_in_process(
        sandbox: SandboxServer) -> None:
    arguments: list[Any] = ['{"seconds": 5', [1, 2], "42", {"seconds": "soon"}]
    names: list[Any] = ["no_such", "", 5, {"tool": "wait"}, None]  # none names a tool
    calls = [("wait", a) for a in arguments] + [(name, {}) for name in names]

    def over_http(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            return [request(lease.url, "POST", CALL_PATH, token=lease.token,
                            body={"name": name, "arguments": args})[1]
                    for name, args in calls]

    def in_process(session: AgentSession) -> Any:
        return [{"text": r.text(), "isError": r.is_error} for r in
                [session.call(name, args) for name, args in calls]]

    remote, over = in_episode(over_http)
    local, inside = in_episode(in_process)
    assert remote == local
    assert over.trace == inside.trace
    assert all(reply["isError"] for reply in remote)


def test_no_response_reveals_the_ledger_the_fault_plan_or_the_seeds(
        sandbox: SandboxServer) -> None:
    """The agent writes once, gets the timeout whose request did commit, and finishes: every
    byte it was sent is scanned for what only the grader may know."""
    for key in (LOST_ACK, LATE):
        def body(session: AgentSession, key: EpisodeKey = key) -> Any:
            focal = session.task.focal(key.focal_write)
            step = next(s for s in session.task.plan if s.tool == focal.tool)
            args = _render_lenient(step.args, {**session.task.params, "steps": {}})
            texts = []
            with sandbox.episode(session) as lease:
                for name, arguments in [(focal.tool, args), ("wait", {"seconds": 5}),
                                        ("no_such_tool", {}),
                                        ("finish", {"status": "partial", "summary": "x",
                                                    "uncertain_operations": []}),
                                        ("wait", {"seconds": 1})]:
                    texts.append(request(lease.url, "POST", CALL_PATH, token=lease.token,
                                         body={"name": name, "arguments": arguments})[1])
                texts.append(request(lease.url, "GET", TOOLS_PATH, token=lease.token)[1])
                texts.append(request(lease.url, "GET", TOOLS_PATH, token="x")[1])
                texts.append(request(lease.url, "GET", "/v1/fault", token=lease.token)[1])
            return json.dumps(texts)

        seen, record = in_episode(body, key=key)
        assert record.fired and record.ledger, key.id
        secrets = {str(record.world_seed), str(record.base_seed), key.fault_mode,
                   "commit_at", "request_seq", "record_ids", "undone_at"}
        secrets |= {rid for effect in record.ledger for rid in effect.record_ids}
        if record.fault.delay_s:
            secrets.add(str(record.fault.delay_s))
        leaked = {s for s in secrets if s in seen}
        assert not leaked, (key.id, leaked)
        assert "episode_over" in seen  # the call after finish was refused, not executed


def test_calls_into_one_episode_are_serialised(sandbox: SandboxServer) -> None:
    """Eight clients at once: the world sees one call at a time, and all eight."""
    inside = {"now": 0, "max": 0}
    lock = threading.Lock()

    def body(session: AgentSession) -> Any:
        real_call = session.call

        def watched(name: str, arguments: Any = None, **kw: Any) -> Any:
            with lock:
                inside["now"] += 1
                inside["max"] = max(inside["max"], inside["now"])
            time.sleep(0.01)
            try:
                return real_call(name, arguments, **kw)
            finally:
                with lock:
                    inside["now"] -= 1

        session.call = watched  # type: ignore[method-assign]
        with sandbox.episode(session) as lease:
            threads = [threading.Thread(target=request, args=(lease.url, "POST", CALL_PATH),
                                        kwargs={"token": lease.token,
                                                "body": {"name": "wait",
                                                         "arguments": {"seconds": 3}}})
                       for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

    _, record = in_episode(body)
    assert inside["max"] == 1
    assert record.tool_calls == 8 and record.sim_seconds == 24


def test_a_bug_in_the_episode_is_a_500_kept_for_the_runner_not_a_dead_server(
        sandbox: SandboxServer) -> None:
    def body(session: AgentSession) -> Any:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("world exploded with seed 1234")

        session.call = broken  # type: ignore[method-assign]
        with sandbox.episode(session) as lease:
            status, reply = request(lease.url, "POST", CALL_PATH, token=lease.token,
                                    body={"name": "wait", "arguments": {"seconds": 1}})
            listed = request(lease.url, "GET", TOOLS_PATH, token=lease.token)[0]
            return status, reply, listed, lease.failure

    (status, reply, listed, failure), _ = in_episode(body)
    assert status == 500 and "1234" not in json.dumps(reply)
    assert listed == 200
    assert isinstance(failure, RuntimeError)


def test_one_keep_alive_connection_serves_a_whole_episode(sandbox: SandboxServer) -> None:
    def body(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            port = int(lease.url.rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            headers = {"Authorization": f"Bearer {lease.token}"}
            conn.request("GET", TOOLS_PATH, headers=headers)
            conn.getresponse().read()
            first_socket = conn.sock
            for _ in range(20):
                conn.request("POST", CALL_PATH, headers=headers,
                             body=json.dumps({"name": "wait", "arguments": {"seconds": 1}}))
                response = conn.getresponse()
                assert response.status == 200
                response.read()
            same = conn.sock is first_socket
            conn.close()
            return same

    same, record = in_episode(body)
    assert same and record.tool_calls == 20


def test_the_service_binds_to_loopback_only(sandbox: SandboxServer) -> None:
    assert sandbox.url.startswith("http://127.0.0.1:")


def _raw_exchange(url: str, data: bytes) -> bytes:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


# -- clients that never finish ---------------------------------------------------------------
def test_an_unauthenticated_body_is_refused_before_it_is_read(sandbox: SandboxServer) -> None:
    """A client announcing a large body without the token gets 401 at once and the connection
    closes; the server never waits for (or buffers) the body it will not use."""
    def body(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            # the exchange waits for the server to close: with the old order it would wait for
            # a body that never comes, until the socket's timeout
            return _raw_exchange(lease.url, f"POST {CALL_PATH} HTTP/1.1\r\nHost: x\r\n"
                                 "Content-Length: 1000000\r\n\r\n".encode())

    answer, record = in_episode(body)
    assert answer.startswith(b"HTTP/1.1 401") and b"Connection: close" in answer
    assert record.tool_calls == 0


def test_a_body_that_trickles_past_its_deadline_is_cut_off(
        sandbox: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from limbo_plugin.server import sandbox_http

    monkeypatch.setattr(sandbox_http, "BODY_DEADLINE_S", 0.5)

    def body(session: AgentSession) -> Any:
        with sandbox.episode(session) as lease:
            port = int(lease.url.rsplit(":", 1)[1])
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(f"POST {CALL_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                             f"{lease.token}\r\nContent-Length: 100\r\n\r\n{{".encode())
                answer = b""
                while not answer.endswith(b"}"):  # the server answers without the rest
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
                return answer

    answer, record = in_episode(body)
    assert answer.startswith(b"HTTP/1.1 408") and b"the body did not arrive within 0.5 s" \
        in answer
    assert record.tool_calls == 0


def test_connections_past_the_bound_are_closed_unanswered(sandbox: SandboxServer) -> None:
    httpd = sandbox._httpd
    assert httpd is not None
    before = httpd.max_connections
    httpd.max_connections = 3
    port = httpd.port
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(6)]
    try:
        refused = 0
        for sock in sockets:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # kept alive
            if sock.recv(65536) == b"":
                refused += 1
        assert refused == 3
    finally:
        httpd.max_connections = before
        for sock in sockets:
            sock.close()
