"""CPU and wall time of the default experiment against as many trivial parametrized tests.

    python benchmarks/plugin_overhead.py [--rounds 5] [--parallel] [--bytecode source|cached]
                                         [--before DIR] [--instructions] [--floor]

Runs, in alternation so that machine load affects both sides alike: the default experiment
(every template, instances 0-1, every focal write and applicable mode, scripted:verify_first)
serially and ``--collect-only``, and a file of the same number of ``assert True`` tests
parametrized with pytest and run with ``-p no:limbo -p no:hypothesispytest``, serially and
``--collect-only`` (``--parallel`` adds both with ``-n 2``). Each case is one whole pytest
process; its CPU time is the process's user + system time (``os.wait4``), which a busy machine
does not inflate the way it inflates wall time. Prints the medians and the ratios, which are
what compare across machines, and the load average before and after. ``--before DIR`` adds
the same Limbo cases run from another checkout (``git archive <commit> | tar -x -C DIR``; its
``limbo_plugin`` comes first on ``PYTHONPATH``), so before and after are measured in one run.

``--instructions`` also runs each case once under ``valgrind --tool=cachegrind`` and prints
the instructions the pytest process executed: a count that machine load does not change at
all, so its ratios hold where a shared machine's CPU seconds wander by ±20 %. (A process
forked under valgrind starts from its parent's count; the largest count is the run's.)

``--bytecode source`` (the default here: the environment sets ``PYTHONDONTWRITEBYTECODE``)
leaves the interpreter as it is, so Limbo, installed editable, compiles its modules from
source in every run while the baseline's libraries load their installed byte code.
``--bytecode cached`` lets both sides cache byte code under a temporary
``PYTHONPYCACHEPREFIX`` (warmed by one untimed run of each case), as an installed package does.

``--floor`` also times the episodes inside each serial Limbo run (``episode_clock.py``: the CPU
spent in ``run_episode``) and prints the run's CPU outside them against the bare items': the
ratio the run would have if its episodes cost nothing, which no faster episode can go below.

Each tree's ``*.egg-info`` is reported: a checkout after ``pip install -e .`` holds one, and
pytest, run from there, treats Limbo's sources as a plugin distribution's. To compare two
commits as a user's checkout runs them, copy it into both ``git archive`` copies.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
CLOCK_VARIABLE = "LIMBO_BENCH_EPISODE_CPU"
BARE = ["-p", "no:limbo", "-p", "no:hypothesispytest"]


@dataclass(frozen=True)
class Run:
    wall_s: float
    cpu_s: float
    episode_cpu_s: float | None = None
    """CPU inside the run's episodes (``--floor``), as ``episode_clock.py`` summed it."""
    episodes: int | None = None
    """How many episodes the clock saw (``--floor``)."""


def count_episodes(env: dict[str, str]) -> int:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=ROOT,
                         capture_output=True, text=True, check=False, env=env).stdout
    return sum(1 for line in out.splitlines() if "::" in line)


def measured(args: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """One pytest process: wall time and its own user + system CPU time (and, when its
    arguments load ``episode_clock``, the CPU inside its episodes)."""
    clocked = "episode_clock" in args
    with tempfile.TemporaryDirectory() as tmp:
        clock_file = Path(tmp) / "episode-cpu"
        if clocked:
            env = {**env, CLOCK_VARIABLE: str(clock_file)}
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p",
                                    "no:cacheprovider", *args], cwd=cwd, env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = 0  # reaped above
        episode_cpu, episodes = None, None
        if clocked:
            if not clock_file.is_file():
                raise SystemExit(f"pytest {' '.join(args)} in {cwd}: the episode clock wrote "
                                 "nothing (did the run start?)")
            seconds, count = clock_file.read_text(encoding="utf-8").split()
            episode_cpu, episodes = float(seconds), int(count)
    return Run(wall, usage.ru_utime + usage.ru_stime, episode_cpu, episodes)


def with_clock(args: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """A Limbo case that also times its episodes: ``episode_clock`` loaded from this folder,
    after whatever the case's ``PYTHONPATH`` puts first (the checkout it measures)."""
    path = [p for p in (env.get("PYTHONPATH", ""), str(HERE)) if p]
    return ["-p", "episode_clock", *args], {**env, "PYTHONPATH": os.pathsep.join(path)}


def instructions(args: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The instructions one pytest process executes (cachegrind's ``I refs``)."""
    with tempfile.TemporaryDirectory() as logs:
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", f"--log-file={logs}/vg.%p",
                        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                       cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        counts = [int(match.group(1).replace(",", ""))
                  for log in Path(logs).iterdir()
                  if (match := re.search(r"I\s+refs:\s+([\d,]+)", log.read_text()))]
    if not counts:
        raise SystemExit("valgrind printed no instruction count (is it installed?)")
    return max(counts)


def egg_info(tree: Path) -> bool:
    """Whether ``tree`` holds the ``.egg-info`` an editable install leaves in a checkout. Run
    from there, pytest sees a distribution listing Limbo's sources, and (before Limbo opted
    out) rewrote every Limbo module's asserts, compiling them itself on every start-up where
    it may not write byte code."""
    return any(tree.glob("*.egg-info"))


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parallel", action="store_true", help="also run both with -n 2")
    parser.add_argument("--bytecode", choices=("source", "cached"), default="source")
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout of the earlier code, run side by side")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each case's instructions under valgrind (once each)")
    parser.add_argument("--floor", action="store_true",
                        help="also time the serial runs' episodes: the run's CPU outside them")
    args = parser.parse_args()
    if args.instructions and shutil.which("valgrind") is None:  # before minutes of rounds
        raise SystemExit("--instructions needs valgrind on PATH (apt install valgrind)")
    if args.before is not None and not (args.before / "limbo_plugin" / "__init__.py").is_file():
        raise SystemExit(f"--before {args.before}: not a checkout of Limbo (no "
                         "limbo_plugin/ there); make one with git archive <commit> | tar -x -C DIR")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        if args.bytecode == "cached":
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        n = count_episodes(env)
        trivial = Path(tmp) / "trivial"
        trivial.mkdir()
        (trivial / "pytest.ini").write_text("[pytest]\n")
        (trivial / "test_trivial.py").write_text(
            "import pytest\n\n"
            f"@pytest.mark.parametrize('i', range({n}))\n"
            "def test_trivial(i):\n    assert True\n")
        records = Path(tmp) / "bench.jsonl"
        serial, parallel = [f"--limbo-records={records}"], ["-n", "2", f"--limbo-records={records}"]
        cases: dict[str, tuple[list[str], Path, dict[str, str]]] = {
            "default experiment, serial": (serial, ROOT, env),
            "trivial tests, serial": ([*BARE], trivial, env),
            "default experiment, collect": (["--collect-only"], ROOT, env),
            "trivial tests, collect": ([*BARE, "--collect-only"], trivial, env),
        }
        before_dir = args.before.resolve() if args.before is not None else None
        if before_dir is not None:
            before_env = {**env, "PYTHONPATH": str(before_dir)}
            cases["before: default experiment, serial"] = (serial, before_dir, before_env)
            cases["before: default experiment, collect"] = (["--collect-only"], before_dir,
                                                            before_env)
        if args.floor:
            for name in [n for n in cases if n.endswith("default experiment, serial")]:
                case_args, cwd, case_env = cases[name]
                clocked_args, clocked_env = with_clock(case_args, case_env)
                cases[name] = (clocked_args, cwd, clocked_env)
        if args.parallel:
            cases["default experiment, -n 2"] = (parallel, ROOT, env)
            cases["trivial tests, -n 2"] = ([*BARE, "-n", "2"], trivial, env)
            if before_dir is not None:
                cases["before: default experiment, -n 2"] = (parallel, before_dir, before_env)
        if args.bytecode == "cached":
            for case_args, cwd, case_env in cases.values():
                measured(case_args, cwd, case_env)
        before = load()
        runs: dict[str, list[Run]] = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (case_args, cwd, case_env) in cases.items():
                runs[name].append(measured(case_args, cwd, case_env))
        after = load()
        counted: dict[str, int] = {}
        if args.instructions:
            for name, (case_args, cwd, case_env) in cases.items():
                counted[name] = instructions(case_args, cwd, case_env)
            if args.floor:  # the episodes' own count: a run that runs each twice, less one
                for name in [n for n in cases if n.endswith("default experiment, serial")]:
                    case_args, cwd, case_env = cases[name]
                    counted[f"{name}, episodes twice"] = instructions(
                        case_args, cwd, {**case_env, "LIMBO_BENCH_EPISODES_TWICE": "1"})
    print(f"{n} items, median of {args.rounds} alternating rounds, byte code {args.bytecode}; "
          f"load average {before} before, {after} after")
    for label, tree in [("after", ROOT), ("before", before_dir)]:
        if tree is not None:
            print(f"{label}: {tree} " + ("holds" if egg_info(tree) else "has no") +
                  " limbo_bench.egg-info (what `pip install -e .` leaves in a checkout)")
    cpu = {name: statistics.median(r.cpu_s for r in values) for name, values in runs.items()}
    wall = {name: statistics.median(r.wall_s for r in values) for name, values in runs.items()}
    print(f"  {'':38} {'CPU s':>7} {'wall s':>7}")
    for name in cases:
        print(f"  {name:38} {cpu[name]:7.2f} {wall[name]:7.2f}")
    pairs = [("serial", "default experiment, serial", "trivial tests, serial"),
             ("start-up and collection", "default experiment, collect",
              "trivial tests, collect")]
    if args.before is not None:
        pairs += [("before, serial", "before: default experiment, serial",
                   "trivial tests, serial"),
                  ("before, start-up and collection", "before: default experiment, collect",
                   "trivial tests, collect")]
    if args.parallel:
        pairs.append(("-n 2", "default experiment, -n 2", "trivial tests, -n 2"))
        if args.before is not None:
            pairs.append(("before, -n 2", "before: default experiment, -n 2",
                          "trivial tests, -n 2"))
    for label, limbo, bare in pairs:
        print(f"ratio {label}: CPU {cpu[limbo] / cpu[bare]:.2f}, "
              f"wall {wall[limbo] / wall[bare]:.2f}  "
              f"(CPU per item above bare: {(cpu[limbo] - cpu[bare]) / n * 1000:.2f} ms)")
    if args.floor:
        print("outside the episodes (the run's CPU less the CPU inside run_episode):")
        for name in [n for n in cases if n.endswith("default experiment, serial")]:
            seen = {r.episodes for r in runs[name]}
            if seen != {n}:
                raise SystemExit(f"{name}: the episode clock saw {seen} episodes, not {n}")
            episodes = statistics.median(r.episode_cpu_s or 0.0 for r in runs[name])
            outside = statistics.median(r.cpu_s - (r.episode_cpu_s or 0.0) for r in runs[name])
            bare_cpu = cpu["trivial tests, serial"]
            print(f"  {name:38} episodes {episodes:.2f} s ({episodes / n * 1000:.2f} ms each, "
                  f"{episodes / bare_cpu:.2f}x the bare run); outside them {outside:.2f} s = "
                  f"{outside / bare_cpu:.2f}x the bare run")
    if counted:
        print("instructions (cachegrind, one run each):")
        for name in counted:
            print(f"  {name:38} {counted[name] / 1e9:7.3f} G")
        for label, limbo, bare in pairs:
            print(f"ratio {label}: instructions {counted[limbo] / counted[bare]:.2f}  "
                  f"({(counted[limbo] - counted[bare]) / n / 1e6:.2f} M per item above bare)")
        for name in [n for n in cases if f"{n}, episodes twice" in counted]:
            episodes = counted[f"{name}, episodes twice"] - counted[name]
            outside = counted[name] - episodes
            bare_count = counted["trivial tests, serial"]
            print(f"{name}: episodes {episodes / 1e9:.3f} G ({episodes / n / 1e6:.2f} M each, "
                  f"{episodes / bare_count:.2f}x the bare run); outside them "
                  f"{outside / 1e9:.3f} G = {outside / bare_count:.2f}x the bare run")


if __name__ == "__main__":
    main()
