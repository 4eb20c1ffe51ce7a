"""Duplicate rate and EOS of every scripted policy by fault family, over the default worlds.

    python benchmarks/policy_table.py [--contract native] [--instances 0 1]

Runs each scripted reference policy on every world of the default experiment (all templates,
the given instances, every focal write and applicable mode) in-process and prints, per policy and
family, the duplicate rate over fired episodes and exactly-once success, plus the wall time and
the in-flight delays the ``timeout_late_tail`` worlds drew (median and share within an hour; the
paper's §4 and §6.3 figures, see docs/decisions.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

from limbo_plugin.agents.scripted import POLICIES
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import iter_worlds
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--contract", default="native")
    parser.add_argument("--instances", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    registry = SpecRegistry.load(default_specs_dir())
    worlds = list(iter_worlds(registry, sorted(registry.templates), args.instances, "all",
                              list(registry.faults)))
    table: dict[tuple[str, str], list[tuple[bool, bool]]] = defaultdict(list)
    delays: list[float] = []
    start = time.perf_counter()
    for policy in POLICIES:
        config = RunConfig(agent=f"scripted:{policy}", contract=args.contract)
        for key in worlds:
            record = run_episode(key, config, registry=registry)
            if record.fired or record.family == "none":
                table[(policy, record.family)].append((record.duplicates > 0, record.eos))
            delay = record.fault.delay_s
            tail = record.fault_mode == "timeout_late_tail" and policy == POLICIES[0]
            if tail and delay is not None:
                delays.append(delay)
    elapsed = time.perf_counter() - start
    families = [f for f in registry.family_order if any((p, f) in table for p in POLICIES)]
    print(f"{len(worlds)} worlds × {len(POLICIES)} policies = {len(worlds) * len(POLICIES)} "
          f"episodes in {elapsed:.1f} s (contract {args.contract}); cells: duplicate % / EOS %")
    print("| policy | " + " | ".join(families) + " |")
    print("|---|" + "---|" * len(families))
    for policy in POLICIES:
        cells = []
        for family in families:
            rows = table[(policy, family)]
            dup = 100 * sum(d for d, _ in rows) / len(rows)
            eos = 100 * sum(e for _, e in rows) / len(rows)
            cells.append(f"{dup:.0f} / {eos:.0f}")
        print(f"| {policy} | " + " | ".join(cells) + " |")
    if delays:
        within = sum(d <= 3600 for d in delays)
        median = statistics.median(delays)
        print(f"timeout_late_tail: {len(delays)} worlds, median delay {median:.0f} s "
              f"({median / 60:.1f} min), within 1 h {100 * within / len(delays):.1f}% "
              f"({within}/{len(delays)})")


if __name__ == "__main__":
    main()
