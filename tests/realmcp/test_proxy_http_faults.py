"""``limbo proxy`` over streamable HTTP makes its faults as HTTP makes them: ``http500_post`` is a
real HTTP 500 status, ``--drop`` closes a timed-out call's connection half-way through its
answer. A client's own transport sees them as it would from a failing server; the real server's
own state shows what ran; and ``limbo guard`` in front of such a proxy keeps a blind-retrying
client to one write."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from realkit import ADA, limbo

from limbo_plugin.realmcp.upstream import Upstream, UpstreamError, call_tool, connect
from limbo_plugin.server.launch import serving_http

slow = pytest.mark.slow
"""A real npm server behind a proxy on HTTP: the slow set."""


def _proxy_argv(mode: str, log: Path, server: list[str], *extra: str) -> list[str]:
    return [sys.executable, "-m", "limbo_plugin.cli", "proxy", "--inject", mode, "--log",
            str(log), "--transport", "streamable-http", "--no-token", *extra, "--", *server]


def _names(env: dict[str, str]) -> list[str]:
    store = Path(env["MEMORY_FILE_PATH"])
    lines = store.read_text().splitlines() if store.exists() else []
    return [json.loads(line)["name"] for line in lines if line.strip()]


async def _first_then_read(url: str) -> tuple[UpstreamError | None, Any]:
    """The client's first create_entities (its failure, as the client's transport reports
    it), then a read on the same session."""
    upstream = Upstream(url=url)
    async with connect(upstream, timeout_s=60) as client:
        failure = None
        try:
            await call_tool(client, upstream, "create_entities", ADA)
        except UpstreamError as exc:
            failure = exc
        graph = await call_tool(client, upstream, "read_graph", {})
    return failure, graph


@slow
def test_http500_post_over_http_answers_a_real_500_after_the_write_ran(tmp_path, memory
                                                                     ) -> None:
    server, env = memory
    log = tmp_path / "proxy.jsonl"
    with serving_http(_proxy_argv("http500_post", log, server), env, label="limbo proxy") as url:
        failure, graph = anyio.run(_first_then_read, url)
    assert failure is not None and failure.status == 500, failure  # the status line's own
    assert "HTTP 500" in failure.problem
    assert not graph.is_error  # the session goes on
    assert _names(env) == ["Ada"]  # the server ran the write before the 500
    entries = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    assert [e.get("client_saw") for e in entries if e.get("injected")] == ["http 500"]


@slow
def test_drop_closes_the_connection_after_the_write_ran(tmp_path, memory) -> None:
    server, env = memory
    log = tmp_path / "proxy.jsonl"
    argv = _proxy_argv("timeout_post", log, server, "--drop")
    with serving_http(argv, env, label="limbo proxy") as url:
        failure, graph = anyio.run(_first_then_read, url)
    assert failure is not None and failure.dropped, failure  # no status: the connection closed
    assert "connection closed" in failure.problem
    assert not graph.is_error and "Ada" in json.dumps(graph.model_dump(mode="json"))
    assert _names(env) == ["Ada"]
    assert '"client_saw": "connection closed"' in log.read_text()


@slow
def test_drop_before_forwarding_leaves_the_server_untouched(tmp_path, memory) -> None:
    """timeout_pre with --drop: the connection closes, nothing reached the server."""
    server, env = memory
    argv = _proxy_argv("timeout_pre", tmp_path / "proxy.jsonl", server, "--drop")
    with serving_http(argv, env, label="limbo proxy") as url:
        failure, _ = anyio.run(_first_then_read, url)
    assert failure is not None and failure.dropped
    assert _names(env) == []


@slow
@pytest.mark.parametrize("mode,extra", [("http500_post", []), ("timeout_post", ["--drop"]),
                                        ("timeout_post", ["--hold"])],
                         ids=["http_500", "dropped", "read_timeout"])
def test_the_guard_in_front_keeps_a_blind_retry_to_one_write(mode, extra, tmp_path, memory,
                                                             memory_verify) -> None:
    """A blind-retrying client, the guard (with server-memory's read-back), the proxy on HTTP
    making a real 500, a dropped connection or no answer at all (the guard's own read timeout
    fires), server-memory: the guard finds the first write took effect and does not send it
    again; the store holds one Ada."""
    from realkit import drive_policy

    server, env = memory
    argv = _proxy_argv(mode, tmp_path / "proxy.jsonl", server, "--config", str(memory_verify),
                       *extra)
    with serving_http(argv, env, label="limbo proxy") as url:
        guard = [sys.executable, "-m", "limbo_plugin.cli", "guard", "--config",
                 str(memory_verify), "--call-timeout", "5", "--url", url]
        done = drive_policy("blind_retry", guard, [("create_entities", ADA)], env=env)
    answers = [answer for name, _, answer in done.calls if name == "create_entities"]
    assert answers[0].is_error
    assert "could not be forwarded" not in answers[0].text(), answers[0].text()
    assert _names(env) == ["Ada"]


@pytest.mark.parametrize("args,expected", [
    (["--inject", "timeout_post", "--drop"], "--drop closes the faulted call's HTTP connection: "
     "it needs --transport streamable-http"),
    (["--inject", "timeout_post", "--drop", "--hold", "--transport", "streamable-http"],
     "give --hold (never answer) or --drop (close the connection), not both"),
    (["--inject", "http500_post", "--drop", "--transport", "streamable-http"],
     "--drop applies to the timeout modes (timeout_pre, timeout_post, timeout_late), not "
     "--inject http500_post"),
])
def test_drop_and_hold_misused_are_one_line(args, expected) -> None:
    done = limbo("proxy", *args, "--no-token", "--", sys.executable, "-c", "pass")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert line.startswith(f"limbo proxy: {expected}") and "\n" not in line, done.stderr


@slow
@pytest.mark.parametrize("front", ["guard", "proxy"])
def test_calls_relayed_to_an_http_upstream_reach_it(front, tmp_path, memory) -> None:
    """The guard and the proxy relay a client's call to a streamable-HTTP upstream on the
    upstream client's own session (its protocol's headers and ``_meta`` stamped as on any
    request of that client): a modern server, which checks the ``Mcp-Method`` header against
    the body, runs it; before, it refused every relayed call with HTTP 400."""
    from realkit import drive_policy

    server, env = memory
    upstream = _proxy_argv("timeout_post", tmp_path / "upstream.jsonl", server, "--rate", "0")
    with serving_http(upstream, env, label="limbo proxy") as url:
        extra = (["--inject", "timeout_post", "--rate", "0", "--log",
                  str(tmp_path / "front.jsonl")] if front == "proxy" else [])
        command = [sys.executable, "-m", "limbo_plugin.cli", front, *extra, "--url", url]
        done = drive_policy("no_retry", command, [("create_entities", ADA)], env=env)
    answer = done.calls[0][2]
    assert not answer.is_error, answer.text()
    assert _names(env) == ["Ada"]
