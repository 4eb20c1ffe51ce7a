"""The episodes alone: CPU per episode of an experiment, in process, and where it goes.

    python benchmarks/episode_cost.py [--experiment default] [--agent A] [--contract C]
                                      [--condition C] [--rounds 5] [--profile] [--top 10]
                                      [--records FILE]

Expands the experiment as the plugin does (the same worlds and run configurations, sorted),
then calls :func:`~limbo_plugin.episode.run_episode` on every episode and serialises its record
with :func:`~limbo_plugin.records.record_line`, which is all an item's setup does besides
pytest's own work. It prints the CPU seconds of each round (``time.process_time``; the first
round also pays the caches that fill on first use, so the median is over the later ones) and,
split out, how much of it the record's line took.

``--profile`` runs one more round under ``cProfile`` with a CPU-time clock (so other processes'
load does not show in it) and prints the top functions by own time (``tottime``), the table
the benchmarks README quotes. The profiler's own cost is charged to the functions called most
often, so compare profiles with each other, not with the rounds' times.

``--records FILE`` writes the record lines of the first round, for comparing two checkouts'
output byte for byte (``run_id`` is empty here, so the lines compare as they are).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def episodes(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from limbo_plugin.experiments import find_experiment, load_experiment
    from limbo_plugin.runconfig import RunConfig
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

    registry = SpecRegistry.load(default_specs_dir())
    overrides = {"agent": args.agent, "contract": args.contract, "condition": args.condition}
    given = {k: v for k, v in overrides.items() if v is not None}
    defaults = RunConfig.parse(given, registry=registry)
    experiment = load_experiment(find_experiment(args.experiment, registry), registry)
    return registry, experiment.episodes(registry, overrides, defaults)


def one_round(registry, items, out=None) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    from limbo_plugin.episode import run_episode
    from limbo_plugin.records import record_line

    episode_cpu = line_cpu = 0.0
    for item in items:
        start = time.process_time()
        record = run_episode(item.key, item.config, registry=registry)
        middle = time.process_time()
        _, line = record_line(record)
        line_cpu += time.process_time() - middle
        episode_cpu += middle - start
        if out is not None:
            out.write(line + "\n")
    return episode_cpu, line_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="default")
    parser.add_argument("--agent")
    parser.add_argument("--contract")
    parser.add_argument("--condition")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--records", default=None)
    args = parser.parse_args()
    registry, items = episodes(args)
    print(f"load average {os.getloadavg()[0]:.1f}; {len(items)} episodes")
    rounds = []
    for number in range(args.rounds):
        if number == 0 and args.records:
            with open(args.records, "w", encoding="utf-8") as out:
                rounds.append(one_round(registry, items, out))
        else:
            rounds.append(one_round(registry, items))
        episode_cpu, line_cpu = rounds[-1]
        print(f"round {number + 1}: episodes {episode_cpu:.3f} CPU-s "
              f"({1e3 * episode_cpu / len(items):.3f} ms each), record lines {line_cpu:.3f} s")
    later = rounds[1:] or rounds
    median = statistics.median(e for e, _ in later)
    print(f"median of rounds 2-{len(rounds)}: {median:.3f} CPU-s in run_episode, "
          f"{statistics.median(line for _, line in later):.3f} s in record_line "
          f"({1e3 * median / len(items):.3f} ms per episode)")
    if args.profile:
        profiler = cProfile.Profile(time.process_time)  # CPU time: load does not show
        profiler.enable()
        one_round(registry, items)
        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
