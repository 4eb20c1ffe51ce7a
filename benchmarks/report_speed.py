"""Wall time and peak memory of ``limbo report`` (or ``limbo summary``) on 10k and 100k records.

    python benchmarks/report_speed.py [--sizes 10000 100000] [--keep DIR] [--command summary]

Realistic records: every scripted reference policy is run once on every world of instance 0 (all
templates, focal writes and applicable modes), and those records — real traces and ledgers — are
replicated under distinct configurations (models, conditions, instruction variants, with token
usage) until the wanted count is reached, so that no two records share an episode key and
configuration. Each measurement runs ``limbo report`` in a fresh process and reports its wall
time, its CPU time with its figure worker's, its peak resident set size and its figure worker's
(the two run at once: their sum bounds the memory used), with the size of the input and of the
report.

    python benchmarks/report_speed.py --one-run [--records FILE] [--rounds 5] [--before DIR]

``--one-run``: ``limbo report`` against ``limbo summary`` of one run of the default experiment
(scripted, 785 episodes; run here first unless ``--records`` gives its file). Each command is a
fresh ``python -m limbo_plugin.cli`` process, timed whole: wall time, its user + system CPU time
(with the figure worker's) and peak RSS (``os.wait4``: the larger of the two processes'); the
two alternate for ``--rounds`` rounds and the medians are shown
with the ratio report / summary. ``--before DIR`` times another checkout in the same rounds, so
that before and after are measured side by side.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = [f"litellm:bench/model-{i}" for i in range(6)]
CONDITIONS = ["vanilla", "guard", "vbr", "wait_300", "sdk_retry"]
INSTRUCTIONS = ["default", "no_cue"]
# 6 × 5 × 2 = 60 configurations of the 5 policies' ~2,000 episodes: room for 100k+ records.


def base_records() -> list[dict]:
    from limbo_plugin.agents.scripted import POLICIES
    from limbo_plugin.episode import run_episode
    from limbo_plugin.experiments import iter_worlds
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    registry = SpecRegistry.load(default_specs_dir())
    worlds = list(iter_worlds(registry, sorted(registry.templates), [0], "all",
                              list(registry.faults)))
    out = []
    for policy in POLICIES:
        config = RunConfig(agent=f"scripted:{policy}")
        out += [json.loads(run_episode(key, config, registry=registry).model_dump_json())
                for key in worlds]
    return out


def write_records(path: Path, base: list[dict], count: int) -> None:
    """``count`` records: the base records under successive distinct configurations."""
    configs = itertools.product(MODELS, CONDITIONS, INSTRUCTIONS)
    written = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < count:
            agent, condition, instruction = next(configs)
            for i, record in enumerate(base):
                if written == count:
                    break
                policy = record["agent"].removeprefix("scripted:")
                copy = dict(record, agent=f"{agent}-{policy}", condition=condition,
                            instruction=instruction,
                            usage={"prompt_tokens": 9000 + 37 * i % 4000,
                                   "completion_tokens": 700 + 11 * i % 500,
                                   "cost_usd": 0.01, "model_calls": 6})
                handle.write(json.dumps(copy) + "\n")
                written += 1


def measure(command: str, records: Path, out: Path) -> None:
    """Run in a child process: one command, then print wall and CPU seconds and peak RSS in
    MiB (CPU time, user + system, is what a loaded machine inflates least)."""
    import contextlib
    import io

    from limbo_plugin.cli import main

    argv = ["report", str(records), "--out", str(out)] if command == "report" \
        else ["summary", str(records)]
    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    start, start_cpu = time.perf_counter(), time.process_time() + children_cpu()
    with contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() + children_cpu() - start_cpu
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    worker_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the figure worker
    print(json.dumps({"status": status, "seconds": elapsed, "cpu_seconds": cpu,
                      "peak_mib": peak_kib / 1024, "worker_peak_mib": worker_kib / 1024}))


ROOT = Path(__file__).resolve().parent.parent


def default_run(records: Path) -> None:
    """One scripted run of the default experiment, recorded to ``records``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "specs", "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", f"--limbo-records={records}"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, check=False)
    if not records.is_file():
        raise SystemExit(f"the default experiment wrote no records:\n{done.stdout[-2000:]}")


def timed_cli(tree: Path, argv: list[str], cwd: Path) -> tuple[float, float, float]:
    """One ``limbo`` process of checkout ``tree``: wall seconds, CPU seconds (user + system)
    and peak RSS in MiB."""
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "limbo_plugin.cli", *argv], cwd=cwd,
                               env={**os.environ, "PYTHONPATH": str(tree)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    assert process.stderr is not None
    errors = process.stderr.read()
    process.stderr.close()
    process.returncode = 0  # reaped above
    if status != 0:
        raise SystemExit(f"limbo {' '.join(argv)} ({tree}) failed:\n{errors.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def one_run(records: Path | None, rounds: int, before: Path | None) -> None:
    """``limbo report`` / ``limbo summary`` of one run of the default experiment, alternating,
    medians (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="limbo-report-ratio-") as tmp:
        work = Path(tmp)
        if before is not None and not (before / "limbo_plugin").is_dir():
            raise SystemExit(f"--before {before}: not a checkout of Limbo (no limbo_plugin/)")
        if records is None:
            records = work / "run.jsonl"
            default_run(records)
        records = records.resolve()
        if not records.is_file():
            raise SystemExit(f"--records {records}: no such record file")
        count = sum(1 for _ in records.open("rb"))
        trees = [("this checkout", ROOT)] + ([("before", before.resolve())] if before else [])
        seen: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        for round_ in range(rounds):
            for name, tree in trees if round_ % 2 == 0 else trees[::-1]:
                for command in ("summary", "report") if round_ % 2 == 0 else ("report",
                                                                              "summary"):
                    argv = ["summary", str(records)] if command == "summary" else \
                        ["report", str(records), "--out", str(work / "report")]
                    seen.setdefault((name, command), []).append(timed_cli(tree, argv, work))
                    if command == "report":
                        shutil.rmtree(work / "report")
                        shutil.rmtree(work / "history", ignore_errors=True)
    print(f"{count} records ({records.stat().st_size / 2**20:.1f} MiB), {rounds} alternating "
          "rounds, medians")
    print("| checkout | command | wall | CPU | peak RSS |")
    print("|---|---|---|---|---|")
    medians: dict[tuple[str, str], tuple[float, ...]] = {}
    for (name, command), runs in seen.items():
        medians[name, command] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
        wall, cpu, rss = medians[name, command]
        print(f"| {name} | limbo {command} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB |")
    for name, _ in trees:
        report, summary = medians[name, "report"], medians[name, "summary"]
        print(f"{name}: limbo report / limbo summary = {report[0] / summary[0]:.1f}x wall, "
              f"{report[1] / summary[1]:.1f}x CPU")


def directory_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--keep", default=None, help="keep the records and reports here")
    parser.add_argument("--command", choices=["report", "summary"], default="report",
                        help="the limbo command to time (summary: target (f), 100k < 30 s, 1 GB)")
    parser.add_argument("--one-run", action="store_true",
                        help="limbo report / limbo summary of one run of the default experiment")
    parser.add_argument("--records", type=Path, default=None,
                        help="--one-run: that run's record file (default: run it here first)")
    parser.add_argument("--rounds", type=int, default=5, help="--one-run: alternating rounds")
    parser.add_argument("--before", type=Path, default=None,
                        help="--one-run: also time this checkout, in the same rounds")
    parser.add_argument("--measure", nargs=2, metavar=("RECORDS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args.command, Path(args.measure[0]), Path(args.measure[1]))
        return
    if args.one_run:
        one_run(args.records, args.rounds, args.before)
        return
    started = time.perf_counter()
    base = base_records()
    print(f"{len(base)} scripted episodes run in {time.perf_counter() - started:.1f} s; "
          "replicated under distinct configurations")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="limbo-report-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print("| records | input | wall time | CPU time | peak RSS | worker's peak RSS | report size |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        records = work / f"records-{size}.jsonl"
        write_records(records, base, size)
        out = work / f"report-{size}"
        done = subprocess.run([sys.executable, __file__, "--command", args.command,
                               "--measure", str(records), str(out)],
                              capture_output=True, text=True, check=True)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {size:,} | {records.stat().st_size / 2**20:.0f} MiB | "
              f"{figures['seconds']:.1f} s | {figures['cpu_seconds']:.1f} s | "
              f"{figures['peak_mib']:.0f} MiB | {figures['worker_peak_mib']:.0f} MiB | "
              f"{directory_size(out) / 2**20 if out.exists() else 0:.0f} MiB |")
        if not args.keep:
            records.unlink()
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
