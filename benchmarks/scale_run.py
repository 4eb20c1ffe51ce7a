"""How a run's cost grows with its episodes, and whether parallelism pays (targets (c) and (f)).

    python benchmarks/scale_run.py [--sizes 1000 10000 50000] [--parallel 5000] [--rounds 2]

For each size, a temporary project holds a copy of the specs and an experiment of about that
many scripted episodes (every template, focal write and applicable mode; as many instances and
scripted policies as it takes). Beside it, a file of as many trivial parametrized tests, run
with ``-p no:limbo -p no:hypothesispytest`` so that the baseline pays none of Limbo's costs.
Each run is a fresh process; its wall time and peak resident set size (``wait4``) are printed,
with the record file's bytes per episode. Rounds alternate the cases so that machine load hits
them alike.

``--parallel N`` times the N-episode experiment serially, with ``-n 2`` and with ``-n auto``
(memory is not reported for those: ``wait4`` does not separate the controller from its
workers). ``--sizes`` measures serial runs only, so peak RSS is the controller's own.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ["verify_first", "blind_retry", "same_key", "escalate_first", "no_retry"]


def worlds_per_instance() -> int:
    from limbo_plugin.experiments import iter_worlds
    from limbo_plugin.spec.registry import SpecRegistry

    registry = SpecRegistry.load(ROOT / "specs")
    return len(list(iter_worlds(registry, sorted(registry.templates), [0], "all",
                                list(registry.faults))))


def experiment_for(size: int, per_instance: int) -> tuple[str, int]:
    """An experiment spec of about ``size`` episodes, and its exact episode count."""
    policies = POLICIES[:max(1, min(len(POLICIES), math.ceil(size / per_instance)))]
    instances = max(1, math.ceil(size / (per_instance * len(policies))))
    agents = ", ".join(f"scripted:{p}" for p in policies)
    text = (f"name: scale\ntemplates: all\ninstances: {list(range(instances))}\n"
            f"focal_writes: all\nmodes: all\nagents: [{agents}]\n")
    return text, per_instance * instances * len(policies)  # instances differ a little


def make_projects(tmp: Path, size: int, per_instance: int) -> tuple[Path, Path, int]:
    limbo = tmp / f"limbo-{size}"
    shutil.copytree(ROOT / "specs", limbo / "specs")
    text, _ = experiment_for(size, per_instance)
    (limbo / "specs" / "experiments" / "scale.yaml").write_text(text)
    (limbo / "pytest.ini").write_text("[pytest]\ntestpaths = specs\n"
                                      "addopts = -p no:cacheprovider\n")
    count = collected(limbo)
    bare = tmp / f"bare-{size}"
    bare.mkdir()
    (bare / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (bare / "test_trivial.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.parametrize('i', range({count}))\n"
        "def test_trivial(i):\n    assert True\n")
    return limbo, bare, count


def collected(project: Path) -> int:
    out = subprocess.run([sys.executable, "-m", "pytest", "--experiment", "scale",
                          "--collect-only", "-q"], cwd=project, capture_output=True,
                         text=True, check=False).stdout
    return sum(1 for line in out.splitlines() if "::" in line)


def run(args: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one pytest process."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args], cwd=cwd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_maxrss / 1024


def limbo_args(project: Path, extra: list[str]) -> list[str]:
    return ["--experiment", "scale", f"--limbo-records={project / 'records.jsonl'}", *extra]


BARE = ["-p", "no:limbo", "-p", "no:hypothesispytest"]


def sizes_table(tmp: Path, sizes: list[int], rounds: int, per_instance: int) -> None:
    print("serial runs: wall time (median) and peak RSS of the one process")
    print(f"{'episodes':>9} {'limbo s':>8} {'bare s':>7} {'ratio':>6} {'ms/ep':>6} "
          f"{'limbo MiB':>9} {'bare MiB':>8} {'bytes/ep':>8}")
    for size in sizes:
        limbo, bare, count = make_projects(tmp, size, per_instance)
        results: dict[str, list[tuple[float, float]]] = {"limbo": [], "bare": []}
        for _ in range(rounds):
            results["limbo"].append(run(limbo_args(limbo, []), limbo))
            results["bare"].append(run(BARE, bare))
        wall = {k: statistics.median(t for t, _ in v) for k, v in results.items()}
        rss = {k: max(m for _, m in v) for k, v in results.items()}
        per_episode = (limbo / "records.jsonl").stat().st_size / count
        print(f"{count:>9} {wall['limbo']:>8.1f} {wall['bare']:>7.1f} "
              f"{wall['limbo'] / wall['bare']:>6.2f} {1e3 * wall['limbo'] / count:>6.2f} "
              f"{rss['limbo']:>9.0f} {rss['bare']:>8.0f} {per_episode:>8.0f}", flush=True)
        shutil.rmtree(limbo)
        shutil.rmtree(bare)


def parallel_table(tmp: Path, size: int, rounds: int, per_instance: int) -> None:
    limbo, bare, count = make_projects(tmp, size, per_instance)
    cases = {"serial": [], "-n 2": ["-n", "2"], "-n auto": ["-n", "auto"]}
    times: dict[str, list[float]] = {name: [] for name in cases}
    bare_times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, extra in cases.items():
            times[name].append(run(limbo_args(limbo, extra), limbo)[0])
            bare_times[name].append(run([*BARE, *extra], bare)[0])
    print(f"\n{count} episodes (os.cpu_count() = {os.cpu_count()}), median of {rounds}")
    print(f"{'':8} {'limbo s':>8} {'bare s':>7} {'vs serial':>9}")
    serial = statistics.median(times["serial"])
    for name in cases:
        value = statistics.median(times[name])
        print(f"{name:8} {value:>8.1f} {statistics.median(bare_times[name]):>7.1f} "
              f"{value / serial:>9.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 50000])
    parser.add_argument("--parallel", type=int, default=5000,
                        help="episodes of the serial / -n 2 / -n auto comparison (0: skip)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    per_instance = worlds_per_instance()
    print(f"load average {os.getloadavg()[0]:.1f}; {per_instance} worlds per instance")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if args.sizes:
            sizes_table(tmp, args.sizes, args.rounds, per_instance)
        if args.parallel:
            parallel_table(tmp, args.parallel, args.rounds, per_instance)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
