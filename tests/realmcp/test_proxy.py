"""``limbo proxy --inject`` between the scripted policies and a real server (server-memory), and
``limbo proxy report``: the duplicates the benchmark predicts, seen by the transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from realkit import ADA, drive_policy, limbo, proxy_command, report_json

from limbo_plugin.realmcp.proxy import Schedule, intent_of
from limbo_plugin.realmcp.proxy_report import read_log, summarize


def _run(policy: str, mode: str, tmp_path: Path, memory: tuple[list[str], dict[str, str]],
         config: Path | None = None, *extra: str) -> dict:
    server, env = memory
    log = tmp_path / f"{policy}-{mode}.jsonl"
    done = drive_policy(policy, proxy_command(mode, log, server, *extra),
                        [("create_entities", ADA)], config=config, env=env)
    assert done.finish is not None  # the policy ran its plan to the end
    return report_json(log)["create_entities"]


@pytest.mark.slow
def test_blind_retry_duplicates_under_timeout_post(tmp_path, memory) -> None:
    counts = _run("blind_retry", "timeout_post", tmp_path, memory)
    assert (counts["intents"], counts["faulted"], counts["duplicated"]) == (1, 1, 1)


@pytest.mark.slow
def test_verify_first_reads_back_instead(tmp_path, memory, memory_verify) -> None:
    counts = _run("verify_first", "timeout_post", tmp_path, memory, memory_verify,
                  "--config", str(memory_verify))
    assert (counts["faulted"], counts["duplicated"], counts["verified"]) == (1, 0, 1)


@pytest.mark.slow
def test_blind_retry_is_right_when_the_request_never_arrived(tmp_path, memory) -> None:
    counts = _run("blind_retry", "timeout_pre", tmp_path, memory)
    assert (counts["faulted"], counts["duplicated"], counts["left"]) == (1, 0, 1)


@pytest.mark.slow
def test_redelivery_duplicates_even_a_careful_client(tmp_path, memory) -> None:
    counts = _run("verify_first", "redelivery", tmp_path, memory, None,
                  "--redelivery-after", "0")
    assert (counts["faulted"], counts["duplicated"]) == (1, 1)


def test_the_schedule_is_seeded_and_faults_only_an_intents_first_call() -> None:
    intents = [intent_of("t", {"n": i}, None) for i in range(200)]
    a, b = Schedule(7, 0.3), Schedule(7, 0.3)
    first = [i for i in intents if a.faults(i)]
    assert first == [i for i in reversed(intents) if b.faults(i)][::-1]  # order-independent
    assert 30 < len(first) < 90
    assert not any(a.faults(i) for i in intents)  # a retry of a faulted intent goes through
    assert first != [i for i in intents if Schedule(8, 0.3).faults(i)]
    assert not any(Schedule(7, 0.0).faults(i) for i in intents)


def test_an_intent_ignores_the_key() -> None:
    assert intent_of("t", {"a": 1, "k": "x"}, "k") == intent_of("t", {"a": 1, "k": "y"}, "k")
    assert intent_of("t", {"a": 1}, None) != intent_of("t", {"a": 2}, None)


def _log(tmp_path: Path, calls: list[dict]) -> Path:
    path = tmp_path / "log.jsonl"
    header = {"proxy": {"mode": "timeout_post", "seed": 0, "rate": 1.0, "server": "s",
                        "writes": ["w"], "keys": {"w": "k"}}}
    lines = [header, *({"seq": n, **c} for n, c in enumerate(calls, 1))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _call(intent: str, key: str | None, injected: str | None = None, *, ok: bool = True,
          write: bool = True) -> dict:
    return {"tool": "w" if write else "r", "write": write, "intent": intent, "key": key,
            "arguments": {}, "injected": injected, "forwarded": True,
            "server": {"is_error": not ok}}


def test_the_report_tells_keyed_retries_from_duplicates(tmp_path) -> None:
    path = _log(tmp_path, [
        _call("a", "k1", "timeout_post"), _call("a", "k1"),          # keyed: deduplicated
        _call("b", None, "timeout_post"), _call("b", None),          # duplicated
        _call("c", None, "timeout_post"), _call("x", None, write=False),  # verified
        _call("d", "k2", "timeout_post"), _call("d", "k3"),          # new key: duplicated
        _call("e", None, "timeout_post"), _call("e", None, ok=False),  # refused: left
    ])
    counts = summarize(*read_log(path))["w"]
    assert (counts.intents, counts.faulted, counts.duplicated, counts.keyed,
            counts.verified, counts.left) == (5, 5, 2, 1, 1, 1)


def test_a_bad_log_is_one_line(tmp_path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"seq": 1}\n')
    done = limbo("proxy", "report", str(bad))
    assert done.returncode == 2 and "not a limbo proxy log" in done.stderr
    assert done.stderr.count("\n") == 1
    done = limbo("proxy", "report", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2 and "missing.jsonl" in done.stderr


def test_proxy_usage_and_start_errors_are_one_line(tmp_path) -> None:
    done = limbo("proxy", "--", "python", "-c", "pass")
    assert done.returncode == 2 and "--inject MODE is required" in done.stderr
    done = limbo("proxy", "--inject", "timeout_post", "--log", str(tmp_path / "l.jsonl"),
                 "--", "python", "-c", "import sys; print('port in use', file=sys.stderr)")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "port in use" in done.stderr


@pytest.mark.slow
def test_a_reexecution_the_server_skipped_is_not_a_duplicate(tmp_path, memory,
                                                             memory_verify) -> None:
    """server-memory skips an entity whose name exists: blind_retry re-executes the lost-ack
    write, and the proxy, given the read-back, finds one Ada where the transport saw two
    executions."""
    counts = _run("blind_retry", "timeout_post", tmp_path, memory, None,
                  "--config", str(memory_verify))
    assert (counts["executions"], counts["reexecuted"], counts["duplicated"]) == (2, 1, 0)
    store = Path(memory[1]["MEMORY_FILE_PATH"]).read_text().splitlines()
    assert [json.loads(line)["name"] for line in store] == ["Ada"]


@pytest.mark.slow
def test_a_late_copy_lands_when_the_client_leaves_first(tmp_path, sqlite_db) -> None:
    """``--late-delay 600`` and a client that does not retry and leaves at once (the SDK client
    stops its server about 2 s after closing): the late INSERT still reaches the database, sent
    when the client left, and the report counts no copy left unsent."""
    import sqlite3

    server, db = sqlite_db
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    log = tmp_path / "proxy.jsonl"
    insert = {"query": "INSERT INTO notes (text) VALUES ('late')"}
    done = drive_policy("no_retry", proxy_command("timeout_late", log, server, "--late-delay",
                                                  "600"), [("write_query", insert)])
    assert done.calls[0][2].error_type == "timeout"
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
    assert rows == 1
    counts = report_json(log)["write_query"]
    assert (counts["executions"], counts["undelivered"]) == (1, 0)


@pytest.mark.slow
def test_hold_leaves_the_timeout_to_the_clients_own_transport(tmp_path, memory) -> None:
    """``--hold``: the faulted call is never answered; the SDK client's own read timeout fires
    (an exception of its transport, not a tool result), and the write did run upstream."""
    import anyio
    from mcp.shared.exceptions import MCPError

    from limbo_plugin.realmcp.upstream import Upstream, connect

    server, env = memory
    log = tmp_path / "proxy.jsonl"
    front = Upstream(command=tuple(proxy_command("timeout_post", log, server, "--hold")),
                     env=env)

    async def main() -> str:
        async with connect(front) as client:
            try:
                await client.call_tool("create_entities", ADA, read_timeout_seconds=3)
            except MCPError as exc:
                return type(exc).__name__
        return "answered"

    assert anyio.run(main) == "MCPError"
    store = Path(env["MEMORY_FILE_PATH"]).read_text().splitlines()
    assert [json.loads(line)["name"] for line in store] == ["Ada"]
    assert "no answer (held)" in log.read_text()
