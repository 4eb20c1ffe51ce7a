"""``limbo guard`` in front of real servers tells the client only what happened: a write it did
not send is never reported done, an ambiguous upstream failure is treated as one, a block is
lifted only by an escalation that reached someone, and the upstream's answers pass unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from realkit import drive_policy, proxy_command

from limbo_plugin.conditions.vbr import BLOCKED


def memory_entities(store: Path) -> list[str]:
    """The entity names in server-memory's own store (its JSONL file)."""
    if not store.exists():
        return []
    rows = [json.loads(line) for line in store.read_text().splitlines() if line.strip()]
    return [r["name"] for r in rows if r.get("type") == "entity"]


def _seed(store: Path, name: str) -> None:
    store.write_text(json.dumps({"type": "entity", "name": name, "entityType": "person",
                                 "observations": []}) + "\n")


def _entity(name: str) -> dict:
    return {"name": name, "entityType": "person", "observations": []}


@pytest.mark.slow
@pytest.mark.parametrize("order", ["existing_first", "new_first"])
def test_a_batch_partly_present_is_never_reported_done(order, tmp_path, memory,
                                                       memory_verify) -> None:
    """A batch whose rows the read-back finds only in part (one existed before, the call never
    arrived) is not answered as if it took effect: the guard sends the missing rows or says it
    cannot tell; the client never hears 'done' for an entity the store lacks."""
    server, env = memory
    store = Path(env["MEMORY_FILE_PATH"])
    _seed(store, "Old")
    rows = [_entity("Old"), _entity("New")]
    if order == "new_first":
        rows.reverse()
    behind = proxy_command("timeout_pre", tmp_path / "proxy.jsonl", server,
                           "--config", str(memory_verify))
    guard = ["python", "-m", "limbo_plugin.cli", "guard", "--config", str(memory_verify),
             "--", *behind]
    done = drive_policy("blind_retry", guard, [("create_entities", {"entities": rows})],
                        env=env)
    answers = [answer for name, _, answer in done.calls if name == "create_entities"]
    assert len(answers) >= 2 and answers[0].error_type == "timeout"
    retry = answers[1]
    if "New" not in memory_entities(store):  # not created: the client must not hear it was
        assert retry.is_error and retry.error_type == BLOCKED, retry.text()
    assert "AssertionError" not in retry.text()


async def _calls(command: list[str], env: dict[str, str], calls: list[tuple[str, dict]]
                 ) -> list:
    """The MCP answers to ``calls`` made in order by the SDK's client on one session."""
    from limbo_plugin.realmcp.upstream import Upstream, connect

    upstream = Upstream(command=tuple(command), env=env)
    answers = []
    async with connect(upstream) as client:
        for name, arguments in calls:
            answers.append(await client.call_tool(name, arguments))
    return answers


def call_in_order(command: list[str], env: dict[str, str], calls: list[tuple[str, dict]]
                  ) -> list:
    import anyio

    return anyio.run(_calls, command, env, calls)


def _text(answer) -> str:
    return "\n".join(getattr(b, "text", "") for b in answer.content)


@pytest.mark.slow
def test_a_failed_escalation_does_not_lift_the_block(tmp_path, memory) -> None:
    """The server lists no escalate_to_human: calling it fails, and the next identical retry of
    the unverifiable write is still refused (it would duplicate)."""
    server, env = memory
    behind = proxy_command("timeout_post", tmp_path / "proxy.jsonl", server)
    guard = ["python", "-m", "limbo_plugin.cli", "guard", "--", *behind]
    write = ("create_entities", {"entities": [_entity("Ada")]})
    first, escalated, retry = call_in_order(
        guard, env, [write, ("escalate_to_human", {"reason": "unknown outcome"}), write])
    assert first.is_error and escalated.is_error
    assert retry.is_error and BLOCKED in _text(retry), _text(retry)
    assert memory_entities(Path(env["MEMORY_FILE_PATH"])) == ["Ada"]


def test_an_http_500_from_the_upstream_is_ambiguous_to_the_guard() -> None:
    """A streamable-HTTP upstream that answers a call with HTTP 500 may have committed: the
    guard says the outcome is unknown and refuses the blind retry of a write it cannot verify,
    so the upstream sees one call, not two."""
    from realkit import mcp_stub

    seen: list[str] = []
    with mcp_stub(refuse={"tools/call": 500}, seen=seen) as url:
        guard = ["python", "-m", "limbo_plugin.cli", "guard", "--url", url]
        first, retry = call_in_order(guard, {}, [("echo", {"text": "hi"})] * 2)
    assert first.is_error and "500" in _text(first) and "unknown" in _text(first)
    assert "could not be forwarded" not in _text(first)
    assert retry.is_error and BLOCKED in _text(retry), _text(retry)
    assert seen.count("tools/call") == 1


@pytest.mark.parametrize("failure", [
    {"drop": frozenset({"tools/call"})},
    {"cut": {"tools/call": "application/json"}},
    {"cut": {"tools/call": "text/event-stream"}},
], ids=["no_answer", "json_cut_off", "event_stream_cut_off"])
def test_a_connection_closed_before_the_answer_is_ambiguous_to_the_guard(failure) -> None:
    """A streamable-HTTP upstream whose connection closes after the call was sent (no answer,
    or one cut off half-way) may have run it: the guard says the outcome is unknown, refuses the
    blind retry, and keeps serving on the same session (it neither hangs nor exits)."""
    from realkit import mcp_stub

    seen: list[str] = []
    with mcp_stub(seen=seen, **failure) as url:
        guard = ["python", "-m", "limbo_plugin.cli", "guard", "--url", url]
        first, retry, other = call_in_order(guard, {}, [("echo", {"text": "hi"})] * 2
                                            + [("echo", {"text": "another"})])
    assert first.is_error and "connection closed" in _text(first), _text(first)
    assert "unknown" in _text(first) and "could not be forwarded" not in _text(first)
    assert retry.is_error and BLOCKED in _text(retry), _text(retry)
    assert seen.count("tools/call") == 2  # the first call and the other one, not the retry
    assert other.is_error  # the other call reached the server (which cut it off too)
    assert BLOCKED not in _text(other)


def sqlite_tables(db: Path) -> list[str]:
    """The tables in mcp-server-sqlite's own database file."""
    import sqlite3

    with sqlite3.connect(db) as connection:
        return [r[0] for r in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


@pytest.mark.slow
def test_a_guessed_read_back_is_not_trusted(tmp_path, sqlite_db) -> None:
    """The audit's verify for create_table (list_tables, matched on the query's text) never
    finds a table: trusted, it 'verifies absent', re-sends, and the server's 'already exists'
    tells the client a write that took effect failed. Unchecked, the guard blocks instead."""
    server, db = sqlite_db
    behind = proxy_command("timeout_post", tmp_path / "proxy.jsonl", server)
    guard = ["python", "-m", "limbo_plugin.cli", "guard", "--", *behind]
    write = ("create_table", {"query": "CREATE TABLE notes (id INTEGER PRIMARY KEY)"})
    first, retry = call_in_order(guard, {}, [write, write])
    assert first.is_error and "unknown" in _text(first)
    assert retry.is_error and BLOCKED in _text(retry), _text(retry)
    assert sqlite_tables(db) == ["notes"]


PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000185d4b1b50000000049454e44ae426082")


@pytest.mark.slow
def test_answers_pass_through_the_guard_unchanged(tmp_path, files) -> None:
    """An image block and ``structuredContent`` reach the client as the server sent them."""
    server, root = files
    (root / "dot.png").write_bytes(PNG)
    (root / "note.txt").write_text("hello\n")
    calls = [("read_media_file", {"path": str(root / "dot.png")}),
             ("read_text_file", {"path": str(root / "note.txt")})]
    direct = call_in_order(server, {}, calls)
    guard = ["python", "-m", "limbo_plugin.cli", "guard", "--", *server]
    guarded = call_in_order(guard, {}, calls)
    assert any(block.type == "image" for block in direct[0].content)
    for bare, through in zip(direct, guarded, strict=True):  # the SDK's server adds a _meta
        assert through.model_dump(exclude={"meta"}) == bare.model_dump(exclude={"meta"})


@pytest.mark.slow
def test_a_call_does_not_wait_for_an_unrelated_one(tmp_path, files) -> None:
    """A read of a named pipe blocks in the server until someone writes to the pipe; behind the
    guard, a write of another file is answered meanwhile (the guard orders only calls of the
    same intent). The pipe is fed only after that answer, so a guard that ran one call at a
    time would never answer (the hang limit fails the test)."""
    import anyio

    from limbo_plugin.realmcp.upstream import Upstream, connect

    server, root = files
    pipe = root / "pipe"
    os.mkfifo(pipe)
    guard = Upstream(command=("python", "-m", "limbo_plugin.cli", "guard", "--", *server))

    async def main() -> tuple[Any, Any]:
        answers: dict[str, Any] = {}
        async with connect(guard) as client, anyio.create_task_group() as group:
            async def blocked() -> None:
                answers["pipe"] = await client.call_tool("read_text_file", {"path": str(pipe)})

            group.start_soon(blocked)
            with anyio.fail_after(120):  # a hang limit: answered at once when it works
                answers["write"] = await client.call_tool(
                    "write_file", {"path": str(root / "other.txt"), "content": "x"})
            assert "pipe" not in answers  # the read still waits for the pipe
            await anyio.to_thread.run_sync(pipe.write_text, "fed\n")
        return answers["write"], answers["pipe"]

    write, read = anyio.run(main)
    assert not write.is_error and (root / "other.txt").read_text() == "x"
    assert not read.is_error and "fed" in _text(read)


@pytest.mark.slow
def test_notes_speak_of_the_real_world(tmp_path, memory) -> None:
    """In front of server-memory (no escalation tool, no checked read-back): no simulated-clock
    time, no promise to verify, no tool or report field the server and client do not have."""
    server, env = memory
    behind = proxy_command("timeout_post", tmp_path / "proxy.jsonl", server)
    guard = ["python", "-m", "limbo_plugin.cli", "guard", "--", *behind]
    write = ("create_entities", {"entities": [_entity("Ada")]})
    first, retry = call_in_order(guard, env, [write, write])
    said = _text(first) + _text(retry)
    assert "unknown" in _text(first) and BLOCKED in _text(retry)
    for wrong in ("2026-09-15", "will verify", "escalate_to_human", "uncertain_operations",
                  "harness will"):
        assert wrong not in said, (wrong, said)
    assert "cannot check" in _text(first)
