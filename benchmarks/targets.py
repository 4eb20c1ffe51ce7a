"""Every per-episode cost target, before and after, side by side in one run: one table.

    python benchmarks/targets.py --before DIR [--rounds 5] [--skip mcp report parallel]

``DIR`` is a checkout of the earlier code (``git worktree add DIR <commit>``); the code under test
is this checkout. Each case runs in a fresh process with ``PYTHONPATH`` naming its checkout, and
the cases alternate round by round, so load and warm caches fall on both sides alike. Byte code
is cached (a throwaway ``PYTHONPYCACHEPREFIX``, warmed before the rounds): what a user's second
run costs. The bare baseline is as many trivial parametrized tests as the experiment has
episodes, with neither Limbo nor Hypothesis loaded (``-p no:limbo -p no:hypothesispytest``).

The targets (issue "per-episode cost"):

1. the default experiment, serial, CPU (user + system, ``wait4``) against the bare run's;
2. start-up and collection (``--collect-only``) against the bare collection's;
3. an ``mcp:verify_first`` episode against the ``scripted:verify_first`` episode on the same
   worlds: wall per episode, serial (``benchmarks/mcp_episode.py``'s fork route, run under each
   checkout);
4. ``limbo report`` of one run's records against ``limbo summary`` of the same file: wall, and
   the report's peak memory;
5. ``-n 2`` against serial on the default experiment: wall;
6. serial and ``-n 2`` records byte-identical (run ids aside).

Medians over the rounds. Ratios are what compare across machines; the absolute times are this
machine's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = ["-p", "no:limbo", "-p", "no:hypothesispytest"]


@dataclass
class Sample:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mib: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float, rss_mib: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.rss_mib.append(rss_mib)

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)

    @property
    def peak_rss(self) -> float:
        return max(self.rss_mib)


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (the process and everything it waited for) and peak RSS (MiB)
    of one process."""
    import time

    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def limbo_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "limbo_plugin.cli", *args]


def records_without_run(path: Path) -> list[str]:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("run_id", None)
        lines.append(json.dumps(record, sort_keys=True))
    return sorted(lines)


def mcp_figures(tree: Path, env: dict[str, str], episodes: int) -> dict[str, float]:
    """``tree``'s own ``benchmarks/mcp_episode.py`` (its fork route, one round): the median wall
    of an ``mcp:verify_first`` episode (ms); and ``tree``'s ``benchmarks/episode_cost.py``: the
    ``scripted:verify_first`` episode's CPU (ms, a single-threaded episode's wall)."""
    out = subprocess.run([sys.executable, str(tree / "benchmarks" / "mcp_episode.py"),
                          "--episodes", str(episodes), "--rounds", "1"],
                         cwd=tree, env=env, capture_output=True, text=True, check=False).stdout
    match = re.search(r"^\s*fork\s+(\d+) ms", out, re.MULTILINE)
    if match is None:
        raise SystemExit(f"mcp_episode.py under {tree} printed no fork figure:\n{out[-2000:]}")
    cost = subprocess.run([sys.executable, str(tree / "benchmarks" / "episode_cost.py"),
                           "--agent", "scripted:verify_first", "--rounds", "3"],
                          cwd=tree, env=env, capture_output=True, text=True, check=False).stdout
    scripted = re.search(r"\(([\d.]+) ms per episode\)", cost)
    if scripted is None:
        raise SystemExit(f"episode_cost.py under {tree} printed no figure:\n{cost[-2000:]}")
    return {"mcp_ms": float(match.group(1)), "scripted_ms": float(scripted.group(1))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True,
                        help="a checkout of the earlier code")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip", nargs="*", default=[], choices=["mcp", "report", "parallel"])
    parser.add_argument("--mcp-episodes", type=int, default=12)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": ROOT}
    if not (trees["before"] / "limbo_plugin").is_dir():
        raise SystemExit(f"--before {args.before}: not a checkout of Limbo (no limbo_plugin/)")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        base_env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        envs = {side: {**base_env, "PYTHONPATH": str(tree)} for side, tree in trees.items()}
        episodes = sum("::" in line for line in subprocess.run(
            pytest_command("--collect-only", "specs"), cwd=ROOT, env=envs["after"],
            capture_output=True, text=True, check=False).stdout.splitlines())
        trivial = tmp / "trivial"
        trivial.mkdir()
        (trivial / "pytest.ini").write_text("[pytest]\n")
        (trivial / "test_trivial.py").write_text(
            "import pytest\n\n"
            f"@pytest.mark.parametrize('i', range({episodes}))\n"
            "def test_trivial(i):\n    assert True\n")
        cases: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            "bare, serial": (pytest_command(*BARE), trivial, base_env),
            "bare, collect": (pytest_command(*BARE, "--collect-only"), trivial, base_env),
        }
        for side, tree in trees.items():
            records = tmp / f"{side}.jsonl"
            cases[f"{side}: serial"] = (pytest_command(f"--limbo-records={records}", "specs"),
                                        tree, envs[side])
            cases[f"{side}: collect"] = (pytest_command("--collect-only", "specs"), tree,
                                         envs[side])
            if "parallel" not in args.skip:
                cases[f"{side}: -n 2"] = (pytest_command(
                    "-n", "2", f"--limbo-records={tmp / f'{side}-n2.jsonl'}", "specs"),
                    tree, envs[side])
        for command, cwd, env in cases.values():  # warm the byte code; write the records
            timed(command, cwd, env)
        if "report" not in args.skip:
            for side, tree in trees.items():
                records = tmp / f"{side}.jsonl"
                cases[f"{side}: limbo summary"] = (limbo_command("summary", str(records)), tree,
                                                   envs[side])
                cases[f"{side}: limbo report"] = (limbo_command(
                    "report", str(records), "--out", str(tmp / f"{side}-report")), tree,
                    envs[side])
                timed(*cases[f"{side}: limbo report"])
        samples = {name: Sample() for name in cases}
        load_before = os.getloadavg()
        for _ in range(args.rounds):
            for name, (command, cwd, env) in cases.items():
                records_file = next((a.split("=", 1)[1] for a in command
                                     if a.startswith("--limbo-records=")), None)
                if records_file is not None:  # each run writes its file afresh
                    Path(records_file).unlink(missing_ok=True)
                samples[name].add(*timed(command, cwd, env))
        load_after = os.getloadavg()
        identical = {}
        if "parallel" not in args.skip:
            for side in trees:
                identical[side] = (records_without_run(tmp / f"{side}.jsonl")
                                   == records_without_run(tmp / f"{side}-n2.jsonl"))
        mcp: dict[str, dict[str, float]] = {}
        if "mcp" not in args.skip:
            for side, tree in trees.items():
                mcp[side] = mcp_figures(tree, envs[side], args.mcp_episodes)
    print(f"{episodes} episodes, median of {args.rounds} alternating rounds, byte code cached; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print("\nraw figures (median; wall s, CPU s, peak RSS MiB):")
    for name, sample in samples.items():
        print(f"  {name:28s} wall {sample.median_wall:7.3f}  CPU {sample.median_cpu:7.3f}  "
              f"RSS {sample.peak_rss:7.1f}")
    print("\n| target | goal | before | after |")
    print("|---|---|---|---|")

    def ratio(side: str, case: str, against: str, measure: str = "cpu") -> float:
        a, b = samples[f"{side}: {case}"], samples[against]
        return (a.median_cpu / b.median_cpu if measure == "cpu"
                else a.median_wall / b.median_wall)

    row = "| {} | {} | {} | {} |"
    print(row.format("1. serial CPU / bare", "≤ 1.6×",
                     *(f"{ratio(s, 'serial', 'bare, serial'):.2f}×" for s in trees)))
    print(row.format("2. collection CPU / bare collection", "≤ 1.15×",
                     *(f"{ratio(s, 'collect', 'bare, collect'):.2f}×" for s in trees)))
    if mcp:
        print(row.format("3. mcp episode − scripted episode, wall", "≤ 50 ms",
                         *(f"{mcp[s]['mcp_ms'] - mcp[s]['scripted_ms']:.0f} ms" for s in trees)))
    if "report" not in args.skip:
        def report_cell(side: str) -> str:
            report, summary = samples[f"{side}: limbo report"], samples[f"{side}: limbo summary"]
            return (f"{report.median_wall / summary.median_wall:.1f}× "
                    f"({report.median_wall:.2f} s, {report.peak_rss:.0f} MiB)")

        print(row.format("4. limbo report / limbo summary, wall", "≤ 5×",
                         *(report_cell(s) for s in trees)))
    if "parallel" not in args.skip:
        print(row.format("5. -n 2 / serial, wall", "≤ 1.0×", *(
            f"{samples[f'{s}: -n 2'].median_wall / samples[f'{s}: serial'].median_wall:.2f}×"
            for s in trees)))
        print(row.format("6. serial = -n 2 records", "identical",
                         *("identical" if identical[s] else "DIFFERENT" for s in trees)))


if __name__ == "__main__":
    main()
