"""Where the wall time of one ``mcp:<policy>`` episode goes, phase by phase, across the three
processes it crosses: the agent's SDK client (this process), the ``mcp_attach`` launcher the
client starts, and the forked ``limbo mcp`` child that serves the episode.

    python benchmarks/mcp_phases.py [--episodes 12] [--policy verify_first]

Each process writes a timestamp (``time.monotonic``, one clock for every process on the
machine) at the points below to one file; the script prints the median time of each phase
over all but the first two episodes (start-up). The client's points come from wrapping the
SDK ``Client``'s methods; the fork server's and its children's from a ``sitecustomize`` module
that this script puts on their ``PYTHONPATH`` (the launcher runs with ``-S`` and is timed
between its neighbours). Nothing here changes what the episode does: each record is checked
against ``scripted:<policy>``'s on the same world.

Phases:
  spawn      the client starts the launcher, which connects to the fork server (Python start-up)
  fork       the fork server forks; the child takes over the client's pipes and starts its loop
  initialize the MCP handshake, answered by the child
  list       ``tools/list``: the child asks the sandbox service for the tools
  calls      every ``tools/call`` (the sandbox's own share in brackets)
  close      the client closes stdin, the child ends, the SDK notices the launcher's exit
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SITECUSTOMIZE = '''
import os, time
_LOG = os.environ["LIMBO_BENCH_PHASES"]

def _mark(point):
    with open(_LOG, "a") as f:
        f.write(f"{os.getpid()} {time.monotonic():.6f} {point}\\n")

_fork = os.fork
def _timed_fork():
    _mark("fork")
    pid = _fork()
    if pid == 0:
        _mark("forked")
    return pid
os.fork = _timed_fork

def _patch():
    import limbo_plugin.server.client as client
    import limbo_plugin.server.mcp_server as server
    serve_stdio = server.serve_stdio
    async def timed_serve_stdio(sandbox):
        _mark("serving")
        try:
            return await serve_stdio(sandbox)
        finally:
            _mark("served")
    server.serve_stdio = timed_serve_stdio
    for name in ("list_tools", "call"):
        original = getattr(client.SandboxClient, name)
        def timed(self, *args, _original=original, _name=name, **kwargs):
            _mark("sandbox." + _name + ".start")
            try:
                return _original(self, *args, **kwargs)
            finally:
                _mark("sandbox." + _name + ".end")
        setattr(client.SandboxClient, name, timed)

import builtins
_import = builtins.__import__
_patched = []
def _watching_import(name, *args, **kwargs):
    module = _import(name, *args, **kwargs)
    if not _patched and name == "limbo_plugin.server.deep_lines":
        _patched.append(True)
        _patch()
    return module
builtins.__import__ = _watching_import
'''


def drive(log: str, episodes: int, policy: str) -> None:
    """Run the episodes in this process, marking the client's points."""
    import time

    from mcp import Client
    from mcp_episode import lost_ack_worlds

    from limbo_plugin.episode import run_episode
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    def mark(point: str) -> None:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} {time.monotonic():.6f} client.{point}\n")

    def wrap(name: str, before: str | None, after: str) -> None:
        original = getattr(Client, name)

        async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            if before:
                mark(before)
            result = await original(self, *args, **kwargs)
            mark(after)
            return result
        setattr(Client, name, timed)

    wrap("__aenter__", "enter", "initialized")
    wrap("__aexit__", "exit", "closed")
    wrap("list_tools", None, "listed")
    wrap("call_tool", "call.start", "call.end")

    registry = SpecRegistry.load(default_specs_dir())
    worlds = lost_ack_worlds(registry)
    identical = 0
    ignored = {"agent", "test_id", "run_id"}
    for index in range(episodes):
        key = worlds[index % len(worlds)]
        mark("episode")
        remote = run_episode(key, RunConfig(agent=f"mcp:{policy}"), registry=registry)
        mark("recorded")
        local = run_episode(key, RunConfig(agent=f"scripted:{policy}"), registry=registry)
        if remote.error is None and (remote.model_dump(exclude=ignored)
                                     == local.model_dump(exclude=ignored)):
            identical += 1
    print(json.dumps({"identical": identical, "episodes": episodes}))


def phases(marks: list[tuple[float, str]]) -> dict[str, float]:
    """One episode's marks (in time order) as the duration of each phase, in ms."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for t, point in marks:
        first.setdefault(point, t)
        last[point] = t
    calls = [t for t, p in marks if p in ("client.call.start", "client.call.end")]
    sandbox = [t for t, p in marks if p in ("sandbox.call.start", "sandbox.call.end")]
    ms = 1000.0
    return {
        "spawn": (first["fork"] - first["client.enter"]) * ms,
        "fork": (first["serving"] - first["fork"]) * ms,
        "initialize": (first["client.initialized"] - first["serving"]) * ms,
        "list": (first["client.listed"] - first["client.initialized"]) * ms,
        "calls": sum(b - a for a, b in zip(calls[::2], calls[1::2], strict=True)) * ms,
        "calls: sandbox": sum(b - a for a, b in zip(sandbox[::2], sandbox[1::2],
                                                    strict=True)) * ms,
        "close": (last["client.closed"] - last["client.exit"]) * ms,
        "episode": (last["client.recorded"] - first["client.episode"]) * ms,
        "tool calls": len(calls) / 2,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--policy", default="verify_first")
    parser.add_argument("--drive", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        drive(args.drive, args.episodes, args.policy)
        return
    with tempfile.TemporaryDirectory(prefix="limbo-phases-") as scratch:
        Path(scratch, "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        log = str(Path(scratch, "marks.txt"))
        inherited = os.environ.get("PYTHONPATH")
        env = {**os.environ, "LIMBO_BENCH_PHASES": log,
               "PYTHONPATH": os.pathsep.join([scratch, str(ROOT), *([inherited] if inherited
                                                                  else [])])}
        load = " ".join(f"{v:.1f}" for v in os.getloadavg())
        out = subprocess.run([sys.executable, __file__, "--drive", log, "--episodes",
                              str(args.episodes), "--policy", args.policy], env=env, cwd=ROOT,
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"the driver failed (exit {out.returncode}): "
                             f"{out.stderr.strip().splitlines()[-1:]}")
        checked = json.loads(out.stdout.strip().splitlines()[-1])
        marks = sorted((float(t), point) for _, t, point in
                       (line.split() for line in Path(log).read_text().splitlines()))
    episodes: list[list[tuple[float, str]]] = []
    for t, point in marks:
        if point == "client.episode":
            episodes.append([])
        if episodes:
            episodes[-1].append((t, point))
    measured = [phases(e) for e in episodes[2:]]
    print(f"mcp:{args.policy}, {len(measured)} lost-ack episodes after two for start-up; "
          f"load average {load}; records identical to scripted:{args.policy}: "
          f"{checked['identical']} of {checked['episodes']}")
    for name in measured[0]:
        value = statistics.median(m[name] for m in measured)
        unit = "" if name == "tool calls" else " ms"
        print(f"  {name:16} {value:8.1f}{unit}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
