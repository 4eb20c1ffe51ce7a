"""``limbo proxy report LOG``: per write tool, how the client recovered from the injected faults.

An *intent* is a tool and its arguments without the idempotency key (the proxy's fingerprint).
Per write tool the report counts intents, the faulted ones, and, as the transport saw them:

- ``executions``: the successful executions of the tool the server answered (every copy);
- ``reexecuted``: an intent the server executed successfully twice or more without one shared
  idempotency key (whatever caused it: the client's retry, a redelivery);
- ``duplicated``: a re-executed intent that left more than one record. Where the proxy has a
  checked read-back for the tool (``--config``), it read the state back after the repeat and
  this counts what it found (server-memory skips an existing name, a second ``CREATE TABLE`` is
  refused: re-executed, not duplicated); without one it cannot tell, and counts every
  re-executed intent (the transport's view);
- among the faulted intents that were not duplicated: ``keyed`` (repeated, every copy with the
  same key, which the server deduplicates), ``verified`` (one of the tool's read-backs, as the
  audit found them, was called after the fault and before the next call of another write),
  ``left`` (neither: not repeated, escalated, or held back before the proxy, e.g. by
  ``limbo guard``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class LogError(Exception):
    """The log cannot be read (one line naming the file and line)."""


@dataclass
class ToolCounts:
    intents: int = 0
    faulted: int = 0
    executions: int = 0
    reexecuted: int = 0
    duplicated: int = 0
    keyed: int = 0
    verified: int = 0
    left: int = 0
    undelivered: int = 0
    """Late or redelivered copies the proxy scheduled and never logged as sent (it was stopped
    first): a ``timeout_late`` that became, in effect, a ``timeout_pre``."""
    duplicated_intents: list[str] = field(default_factory=list)


def read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LogError(f"{path}: {exc.strerror}") from None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            if number == len(lines):  # a last line cut short by a kill: the rest stands
                break
            raise LogError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(record, dict):
            raise LogError(f"{path}:{number}: not a JSON object")
        records.append(record)
    if not records or "proxy" not in records[0]:
        raise LogError(f"{path}:1: not a limbo proxy log (its first line names the proxy)")
    return records[0]["proxy"], records[1:]


def summarize(header: dict[str, Any], calls: list[dict[str, Any]]) -> dict[str, ToolCounts]:
    counts = {tool: ToolCounts() for tool in header.get("writes", [])}
    by_intent: dict[tuple[str, str], list[dict[str, Any]]] = {}
    found: dict[tuple[str, str], list[int | None]] = {}
    for call in calls:
        if call.get("write"):
            by_intent.setdefault((call["tool"], call["intent"]), []).append(call)
        elif call.get("scheduled"):
            counts.setdefault(call.get("tool", ""), ToolCounts()).undelivered += 1
        elif isinstance(call.get("read_back"), dict):  # the latest read-back of a repeat
            found[(call.get("tool", ""), call.get("intent", ""))] = list(
                call["read_back"].get("found") or [])
    for call in calls:
        if call.get("write") and call.get("delivery") in ("late", "redelivery") \
                and call.get("forwarded"):
            counts.setdefault(call["tool"], ToolCounts()).undelivered -= 1
    for (tool, _), entries in by_intent.items():
        c = counts.setdefault(tool, ToolCounts())
        c.intents += 1
        executed = [e for e in entries if e.get("forwarded") and e.get("server")
                    and not e["server"].get("is_error")]
        keys = {e.get("key") for e in executed}
        c.executions += len(executed)
        repeated = len(executed) >= 2
        shared_key = repeated and len(keys) == 1 and None not in keys
        faulted = [e for e in entries if e.get("injected")]
        if repeated and not shared_key:
            c.reexecuted += 1
            if _really_duplicated(found.get((tool, entries[0]["intent"]))):
                c.duplicated += 1
                c.duplicated_intents.append(
                    f"{tool} {json.dumps(entries[0].get('arguments'))}")
        if not faulted:
            continue
        c.faulted += 1
        if repeated and not shared_key:
            continue
        read_after = _read_back_after(faulted[0], calls, header.get("read_backs", {}).get(tool))
        if shared_key:
            c.keyed += 1
        elif read_after:
            c.verified += 1
        else:
            c.left += 1
    return counts


def _really_duplicated(counts: list[int | None] | None) -> bool:
    """Whether a re-executed intent left more than one record: what the read-back found, or,
    with no read-back (or one that failed), yes, as the transport saw it."""
    if not counts or any(n is None for n in counts):
        return True
    return any(n is not None and n >= 2 for n in counts)


def _read_back_after(fault: dict[str, Any], calls: list[dict[str, Any]],
                     readers: list[str] | None) -> bool:
    """Whether a read-back of the faulted write was sent before the client moved on to
    another write (any read counts when the log names no read-backs)."""
    for call in calls:
        if call["seq"] <= fault["seq"] or not call.get("forwarded"):
            continue
        if call.get("write"):
            if call.get("intent") != fault.get("intent"):
                return False
            continue
        if readers is None or call.get("tool") in readers:
            return True
    return False


def render(header: dict[str, Any], counts: dict[str, ToolCounts]) -> str:
    lines = [f"limbo proxy: {header.get('mode')} (seed {header.get('seed')}, rate "
             f"{header.get('rate')}) in front of {header.get('server')}", "",
             "| write tool | intents | faulted | executions | reexecuted | duplicated | keyed "
             "| verified | left |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for tool, c in sorted(counts.items()):
        lines.append(f"| {tool} | {c.intents} | {c.faulted} | {c.executions} | "
                     f"{c.reexecuted} | {c.duplicated} | {c.keyed} | {c.verified} | {c.left} |")
    undelivered = sum(max(0, c.undelivered) for c in counts.values())
    if undelivered:
        lines += ["", f"{undelivered} late or redelivered cop(ies) scheduled but never sent: "
                  "the proxy was stopped first"]
    duplicates = [d for c in counts.values() for d in c.duplicated_intents]
    if duplicates:
        lines += ["", "duplicated intents:", *(f"  {d}" for d in duplicates)]
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="limbo proxy report",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("log")
    parser.add_argument("--json", action="store_true")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        header, calls = read_log(Path(args.log))
    except LogError as exc:
        print(f"limbo proxy report: {exc}", file=sys.stderr)
        return 2
    counts = summarize(header, calls)
    if args.json:
        print(json.dumps({"proxy": header, "tools": {t: c.__dict__ for t, c in
                                                     sorted(counts.items())}}, indent=2))
    else:
        print(render(header, counts))
    return 0
