"""What one ``mcp:<policy>`` episode costs: a fresh ``limbo mcp`` per episode against the
worker's MCP fork server, side by side, on the lost-ack episodes of the default experiment.

    python benchmarks/mcp_episode.py [--episodes 20] [--rounds 3] [--policy verify_first]

Each round runs, alternating, one driver process per route and size: ``fresh`` starts
``limbo mcp`` (``python -m limbo_plugin.server.mcp_server``) for every episode, as the agent did
before; ``fork`` launches every episode through :mod:`limbo_plugin.server.mcp_fork`. A driver runs
1 or ``--episodes`` lost-ack episodes (cycling over the lost-ack worlds of instance 0) and checks
every record against ``scripted:<policy>``'s on the same world: identical except the agent (and
the test id, which names it). It prints each episode's wall time; this script takes the median
of all but each driver's first episode (whose time includes the one-off start-up). CPU per
episode is the whole process tree's user + system time (``os.wait4``: the driver, the SDK
client, every ``limbo mcp`` or forked server and the fork server, all waited for), as the
difference between the ``--episodes`` and the 1-episode driver divided by the episodes between
them, so one-off start-up is left out; start-up is the 1-episode driver's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def lost_ack_worlds(registry: Any) -> list[Any]:
    """The lost-ack worlds of instance 0 in the default experiment, in a fixed order."""
    from limbo_plugin.experiments import load_experiment
    from limbo_plugin.records import RUN_FIELDS
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.spec.registry import default_specs_dir

    experiment = load_experiment(default_specs_dir() / "experiments" / "default.yaml", registry)
    return sorted({e.key for e in experiment.episodes(registry, dict.fromkeys(RUN_FIELDS),
                                                      RunConfig())
                   if e.key.instance == 0
                   and registry.fault_mode(e.key.fault_mode).family == "lost_ack"},
                  key=lambda k: k.id)


def drive(route: str, episodes: int, policy: str) -> None:
    """One driver process: run the episodes, print one JSON line of wall times."""
    import limbo_plugin.agents.mcp_agent as mcp_agent
    from limbo_plugin.episode import run_episode
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.server.launch import mcp_launch
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    if route == "fresh":
        mcp_agent.episode_launch = mcp_launch  # type: ignore[assignment]
    registry = SpecRegistry.load(default_specs_dir())
    worlds = lost_ack_worlds(registry)
    walls, identical = [], 0
    for index in range(episodes):
        key = worlds[index % len(worlds)]
        start = time.perf_counter()
        remote = run_episode(key, RunConfig(agent=f"mcp:{policy}"), registry=registry)
        walls.append(time.perf_counter() - start)
        local = run_episode(key, RunConfig(agent=f"scripted:{policy}"), registry=registry)
        ignored = {"agent", "test_id", "run_id"}
        if remote.error is None and (remote.model_dump(exclude=ignored)
                                     == local.model_dump(exclude=ignored)):
            identical += 1
    print(json.dumps({"walls": walls, "identical": identical, "worlds": len(worlds)}))
    if route == "fork":
        from limbo_plugin.server import mcp_fork

        mcp_fork._close_shared()  # wait for the fork server, so its children's CPU is counted


def measured(route: str, episodes: int, policy: str) -> tuple[float, dict[str, Any]]:
    process = subprocess.Popen([sys.executable, __file__, "--drive", route, "--episodes",
                                str(episodes), "--policy", policy], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0 or not out.strip():
        raise SystemExit(f"the {route} driver failed (exit {process.returncode})")
    return usage.ru_utime + usage.ru_stime, json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--policy", default="verify_first")
    parser.add_argument("--drive", choices=("fresh", "fork"), default=None)
    args = parser.parse_args()
    if args.drive:
        drive(args.drive, args.episodes, args.policy)
        return
    load_before = " ".join(f"{v:.1f}" for v in os.getloadavg())
    cpu: dict[tuple[str, int], list[float]] = {}
    walls: dict[str, list[float]] = {"fresh": [], "fork": []}
    checked = {"fresh": [0, 0], "fork": [0, 0]}
    worlds = 0
    for _ in range(args.rounds):
        for route in ("fresh", "fork"):
            for size in (1, args.episodes):
                seconds, result = measured(route, size, args.policy)
                cpu.setdefault((route, size), []).append(seconds)
                walls[route] += result["walls"][1:]
                checked[route][0] += result["identical"]
                checked[route][1] += len(result["walls"])
                worlds = result["worlds"]
    load_after = " ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"mcp:{args.policy} on the {worlds} lost-ack worlds of instance 0, {args.rounds} "
          f"alternating rounds; load average {load_before} before, {load_after} after")
    print(f"  {'route':8} {'median wall/episode':>20} {'CPU/episode':>12} {'start-up CPU':>13} "
          f"{'records identical':>18}")
    for route in ("fresh", "fork"):
        one = statistics.median(cpu[(route, 1)])
        many = statistics.median(cpu[(route, args.episodes)])
        per_episode = (many - one) / (args.episodes - 1)
        print(f"  {route:8} {statistics.median(walls[route]) * 1000:17.0f} ms "
              f"{per_episode * 1000:9.0f} ms {one:11.2f} s "
              f"{checked[route][0]:>10} of {checked[route][1]}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
