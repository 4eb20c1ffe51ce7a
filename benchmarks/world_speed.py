"""How fast the world is in-process: a 10-call scripted tool sequence, and whole episodes.

    python benchmarks/world_speed.py [--repeat 200]

Prints the median (and p90) wall time of (a) building a world and making ten tool calls through
the fault transport, (b) one scripted episode (build, run the reference plan, grade, record).
"""

from __future__ import annotations

import argparse
import statistics
import time

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.sandbox import Sandbox
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

SEED = {
    "billing": {"customers": [{"id": "cus_1", "name": "Globex", "email": "b@globex.example"}]},
    "database": {"tables": {"migrations": {"columns": ["name", "database"]}}},
}
CALLS = [
    ("billing_create_charge", {"customer_id": "cus_1", "amount_cents": 1200, "currency": "usd",
                               "description": "Invoice INV-1", "idempotency_key": "k1"}),
    ("billing_list_charges", {"customer_id": "cus_1"}),
    ("weibo_publish", {"text": "Release 1.2.3 is out"}),
    ("weibo_list_posts", {}),
    ("tickets_create", {"project": "OPS", "title": "Incident", "description": "db lag"}),
    ("tickets_search", {"query": "incident"}),
    ("email_send", {"to": "oncall@acme.example", "subject": "Incident", "body": "see ticket"}),
    ("db_insert_rows", {"table": "migrations", "rows": [{"name": "0001"}, {"name": "0002"}]}),
    ("db_query", {"table": "migrations", "where": {"name": "0001"}}),
    ("wait", {"seconds": 60}),
]


def ten_calls(registry) -> None:  # type: ignore[no-untyped-def]
    box = Sandbox(["billing", "social", "tickets", "email", "database"], seed_records=SEED,
                  registry=registry)
    for name, args in CALLS:
        box.call(name, args)


def measure(fn, repeat: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    registry = SpecRegistry.load(default_specs_dir())
    ten_calls(registry)  # warm caches (catalog, validators)
    median, p90 = measure(lambda: ten_calls(registry), args.repeat)
    print(f"world + 10 tool calls: median {median * 1e3:.3f} ms, p90 {p90 * 1e3:.3f} ms")
    key = EpisodeKey(template="hotfix_long", instance=0, focal_write="publish_weibo",
                     fault_mode="timeout_late")
    config = RunConfig(agent="scripted:verify_first")
    run_episode(key, config, registry=registry)
    median, p90 = measure(lambda: run_episode(key, config, registry=registry), args.repeat)
    print(f"one scripted episode (hotfix_long, ~12 calls): median {median * 1e3:.3f} ms, "
          f"p90 {p90 * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
