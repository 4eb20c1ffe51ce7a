"""The real-state matrix: three servers nobody here wrote × the five fault modes of
``limbo proxy`` × with and without ``limbo guard``, a blind-retrying client on the official SDK,
and every effect counted from the server's own state (server-memory's store, the files of
server-filesystem, mcp-server-sqlite's database), never from what anybody said.

- server-memory ``create_entities`` (a checked read-back through ``open_nodes`` in the config;
  the server itself skips a name that exists);
- server-filesystem ``edit_file`` appending a ``+`` (no key, no read-back: each execution adds
  one, so a repeat is a real duplicate);
- mcp-server-sqlite ``write_query`` inserting one row (no key, no checked read-back).

Behind the guard: no real duplicate, except under ``redelivery`` on the two servers with no key
(the transport itself delivers the write twice; no read-back can stop a copy the client never
sent, only an idempotency key the server honours helps, as the benchmark predicts); no write
lost (its effect absent while the client was told it succeeded) and none misreported (told done
but absent, or told failed but present). With and without it, ``limbo proxy report``'s
``duplicated`` equals the real duplicates.

``python tests/realmcp/test_real_state_matrix.py`` prints the whole table.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realkit import HANG_S, MEMORY_VERIFY, drive_policy, real_server

from limbo_plugin.conditions.vbr import BLOCKED
from limbo_plugin.realmcp.proxy_report import read_log, summarize

MODES = ("timeout_pre", "timeout_post", "timeout_late", "redelivery", "http500_post")
SERVERS = ("memory", "filesystem", "sqlite")
ONLY_A_KEY_HELPS = {("filesystem", "redelivery"), ("sqlite", "redelivery")}
"""Where the transport delivers the write twice: no guard above it can stop the second copy."""


@dataclass
class Case:
    """One server's write, how to start it on fresh state and how to count its effects."""

    tool: str
    arguments: dict[str, Any]
    command: list[str]
    env: dict[str, str]
    config: Path | None
    effects: Callable[[], int]


def _memory(home: Path) -> Case:
    store = home / "memory.jsonl"
    config = home / "memory.yaml"
    config.write_text(MEMORY_VERIFY)

    def effects() -> int:
        if not store.exists():
            return 0
        rows = [json.loads(line) for line in store.read_text().splitlines() if line.strip()]
        return sum(r.get("type") == "entity" and r.get("name") == "Ada" for r in rows)

    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the note"]}
    return Case("create_entities", {"entities": [entity]}, [real_server("memory")],
                {**os.environ, "MEMORY_FILE_PATH": str(store)}, config, effects)


def _filesystem(home: Path) -> Case:
    root = home / "files"
    root.mkdir()
    tally = root / "tally.txt"
    tally.write_text("tally:\n")
    edit = {"path": str(tally), "edits": [{"oldText": "tally:", "newText": "tally:+"}]}
    return Case("edit_file", edit, [real_server("filesystem"), str(root)], dict(os.environ),
                None, lambda: tally.read_text().count("+"))


def _sqlite(home: Path) -> Case:
    db = home / "data.sqlite"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")

    def effects() -> int:
        with sqlite3.connect(db) as connection:
            return int(connection.execute(
                "SELECT COUNT(*) FROM notes WHERE text = 'hi'").fetchone()[0])

    return Case("write_query", {"query": "INSERT INTO notes (text) VALUES ('hi')"},
                [real_server("sqlite"), "--db-path", str(db)], dict(os.environ), None, effects)


MAKERS = {"memory": _memory, "filesystem": _filesystem, "sqlite": _sqlite}


def _late_copies_landed(log: Path, mode: str) -> None:
    """Wait (a hang limit, not a delay) until the copy the proxy sends on its own has been
    logged: the late or redelivered execution must be in the state before it is counted."""
    if mode not in ("timeout_late", "redelivery"):
        return
    wanted = "late" if mode == "timeout_late" else "redelivery"
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline:
        lines = log.read_text().splitlines() if log.exists() else []
        if any(json.loads(line).get("delivery") == wanted for line in lines[1:] if line):
            return
        time.sleep(0.05)
    raise AssertionError(f"the {wanted} copy never reached the server")


def run_case(server: str, mode: str, guarded: bool, home: Path) -> dict[str, Any]:
    """One cell: the blind-retrying client through the proxy (and the guard), then the state."""
    case = MAKERS[server](home)
    log = home / "proxy.jsonl"
    extra = ["--late-delay", "1", "--redelivery-after", "0.5"]
    if case.config is not None:
        extra += ["--config", str(case.config)]
    # the commands' own modules (what `limbo proxy` and `limbo guard` run), for a lighter start
    command = [sys.executable, "-m", "limbo_plugin.realmcp.proxy", "--inject", mode, "--log",
               str(log), *extra, "--", *case.command]
    if guarded:
        config = ["--config", str(case.config)] if case.config is not None else []
        command = [sys.executable, "-m", "limbo_plugin.realmcp.guard", *config, "--",
                   *command]
    done = drive_policy("blind_retry", command, [(case.tool, case.arguments)], env=case.env)
    _late_copies_landed(log, mode)
    answers = [answer for name, _, answer in done.calls if name == case.tool]
    last = answers[-1]
    effects = case.effects()
    told_done = not last.is_error
    told_failed = last.is_error and not last.is_ambiguous and last.error_type != BLOCKED
    counts = summarize(*read_log(log))[case.tool].__dict__
    return {"server": server, "mode": mode, "guard": guarded,
            "executions": counts["executions"], "effects": effects,
            "duplicates": max(0, effects - 1),
            "lost": int(effects == 0 and told_done),
            "misreported": int((told_done and effects == 0) or (told_failed and effects > 0)),
            "reported_duplicated": counts["duplicated"], "last": last.error_type or "ok"}


@pytest.mark.slow
@pytest.mark.parametrize("guarded", [False, True], ids=["bare", "guarded"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("server", SERVERS)
def test_real_state(server: str, mode: str, guarded: bool, tmp_path: Path) -> None:
    row = run_case(server, mode, guarded, tmp_path)
    assert row["reported_duplicated"] == row["duplicates"], row  # the report tells the truth
    if guarded:
        assert row["lost"] == 0 and row["misreported"] == 0, row
        if (server, mode) not in ONLY_A_KEY_HELPS:
            assert row["duplicates"] == 0, row


if __name__ == "__main__":
    import tempfile

    print("| server | mode | guard | executions | real duplicates | lost | misreported |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for server in SERVERS:
        for mode in MODES:
            for guarded in (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    r = run_case(server, mode, guarded, Path(tmp))
                print(f"| {server} | {mode} | {'yes' if guarded else 'no'} | "
                      f"{r['executions']} | {r['duplicates']} | {r['lost']} | "
                      f"{r['misreported']} |", flush=True)
