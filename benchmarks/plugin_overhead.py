"""Wall time of the default experiment against as many trivial parametrized tests, side by side.

    python benchmarks/plugin_overhead.py [--rounds 3]

Runs, in alternation so machine load affects both alike: the default experiment (every template,
instances 0-1, every focal write and applicable mode, scripted:verify_first) serially and with
``-n 2``, and a file of the same number of ``assert True`` tests parametrized with pytest, serially
and with ``-n 2``. Prints the median wall time of each and the ratios, which are what compare
across machines.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = ["-p", "no:limbo", "-p", "no:hypothesispytest"]


def count_episodes() -> int:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q"], cwd=ROOT,
                         capture_output=True, text=True, check=False).stdout
    return sum(1 for line in out.splitlines() if "::" in line)


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                   cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    n = count_episodes()
    with tempfile.TemporaryDirectory() as tmp:
        trivial = Path(tmp)
        (trivial / "pytest.ini").write_text("[pytest]\n")
        (trivial / "test_trivial.py").write_text(
            "import pytest\n\n"
            f"@pytest.mark.parametrize('i', range({n}))\n"
            "def test_trivial(i):\n    assert True\n")
        records = Path(tmp) / "bench.jsonl"
        cases = {
            "default experiment, serial": ([f"--limbo-records={records}"], ROOT),
            "default experiment, -n 2": (["-n", "2", f"--limbo-records={records}"], ROOT),
            "trivial tests, serial": ([*BARE], trivial),
            "trivial tests, -n 2": ([*BARE, "-n", "2"], trivial),
            "default experiment, collect": (["--collect-only"], ROOT),
            "trivial tests, collect": ([*BARE, "--collect-only"], trivial),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, (args, cwd) in cases.items():
                times[name].append(timed(args, cwd))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{n} items, median of {rounds} rounds")
    for name, value in medians.items():
        print(f"  {name:28} {value:6.2f} s")
    serial = medians["default experiment, serial"] / medians["trivial tests, serial"]
    parallel = medians["default experiment, -n 2"] / medians["trivial tests, -n 2"]
    collect = (medians["default experiment, collect"]
               / medians["trivial tests, collect"])
    print(f"ratio serial: {serial:.2f}  ratio -n 2: {parallel:.2f}  "
          f"ratio start-up and collection: {collect:.2f}")


if __name__ == "__main__":
    main()
