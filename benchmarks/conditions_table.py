"""Exactly-once success and duplicate rate by recovery condition × fault family, scripted agents.

Runs every template × the chosen instances × every focal write × every applicable fault mode
under each condition and prints a Markdown table: one row per (contract, condition), one column
per fault family, each cell ``EOS% / dup%`` over the episodes whose focal fault fired, plus the
mean simulated minutes, harness calls and harness seconds per episode.

    python benchmarks/conditions_table.py                       # blind_retry, instance 0
    python benchmarks/conditions_table.py --agent scripted:no_retry --instances 0 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterable

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

MODES = ("timeout_pre", "timeout_post", "timeout_late", "timeout_late_tail", "http500_pre",
         "http500_post", "partial_batch", "redelivery", "http503", "http429", "outage",
         "schema_drift")
FAMILIES = ("not_executed", "lost_ack", "misleading_500", "partial_batch", "late_commit",
            "redelivery", "explicit")
ROWS = (
    ("native", "vanilla"), ("native", "sdk_retry"), ("native", "rules"), ("native", "vbr"),
    ("native", "wait_90"), ("native", "wait_3600"), ("native", "guard"),
    ("native", "guard-no-key"), ("native", "guard-no-consistency"),
    ("native", "guard-no-block"), ("native", "guard-no-annotate"), ("native", "guard-no-promise"),
    ("native", "state_oracle"), ("native", "outcome_oracle"),
    ("keys_everywhere", "vanilla"), ("keys_everywhere", "guard"),
)


def episodes(registry: SpecRegistry, instances: Iterable[int], contract: str) -> list[EpisodeKey]:
    catalog = registry.catalog(contract)
    keys = []
    for name in sorted(registry.templates):
        for instance in instances:
            task = registry.template(name).instantiate(instance)
            for focal in task.focal_writes:
                definition = catalog.get(focal.tool)
                batch = definition is not None and definition.contract.batch_field is not None
                keys += [EpisodeKey(template=name, instance=instance, focal_write=focal.id,
                                    fault_mode=mode)
                         for mode in MODES if mode != "partial_batch" or batch]
    return keys


def cell(records: list[EpisodeRecord]) -> str:
    if not records:
        return "–"
    eos = 100 * sum(r.eos for r in records) / len(records)
    dup = 100 * sum(r.duplicates > 0 for r in records) / len(records)
    return f"{eos:.0f} / {dup:.0f}"


def table(registry: SpecRegistry, agent: str, instances: list[int],
          rows: Iterable[tuple[str, str]]) -> str:
    header = ["contract", "condition", *FAMILIES, "all faulted", "min/ep", "h.calls",
              "h.sec"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for contract, condition in rows:
        config = RunConfig(agent=agent, condition=condition, contract=contract)
        records = [r for r in (run_episode(k, config, registry=registry)
                                      for k in episodes(registry, instances, contract))
                   if r.fired]
        by_family: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for record in records:
            by_family[record.family].append(record)
        cells = [cell(by_family[f]) for f in FAMILIES]
        lines.append("| " + " | ".join([
            contract, condition, *cells, cell(records),
            f"{statistics.mean(r.sim_seconds for r in records) / 60:.1f}",
            f"{statistics.mean(r.harness_calls for r in records):.2f}",
            f"{statistics.mean(r.harness_seconds for r in records):.0f}",
        ]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", default="scripted:blind_retry")
    parser.add_argument("--instances", type=int, nargs="+", default=[0])
    parser.add_argument("--conditions", nargs="+", default=None,
                        help="native-contract conditions to run instead of the default rows")
    args = parser.parse_args(argv)
    rows = ROWS if args.conditions is None else tuple(("native", c) for c in args.conditions)
    start = time.perf_counter()
    print(f"EOS% / duplicate% over fired episodes; agent {args.agent}; instances "
          f"{' '.join(map(str, args.instances))}\n")
    print(table(SpecRegistry.load(default_specs_dir()), args.agent, args.instances, rows))
    print(f"\n({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
