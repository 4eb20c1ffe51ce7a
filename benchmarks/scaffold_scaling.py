"""Episodes per second of the litellm scaffold with 1, 2, 8 and 16 concurrent workers.

The model answers every call after 200 ms (a local OpenAI-compatible server in a child process
serving the ``verify_first`` policy), so a single worker is latency-bound and concurrency should
help until the client side (litellm, the OpenAI SDK, JSON) saturates the CPU. Workers are
threads in one process (``--mode threads``: one GIL, like a single pytest process) or forked
processes (``--mode processes``: like ``pytest -n N``), each calling
:func:`~limbo_plugin.episode.run_episode` in a loop.

    python benchmarks/scaffold_scaling.py --workers 1 2 8 16 --mode threads
    python benchmarks/scaffold_scaling.py --workers 1 2 8 16 --mode processes

For each level it prints episodes/s, the speedup over one worker and the latency-bound ideal
(workers / (model calls per episode × latency)).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.provider import import_litellm
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir
from limbo_plugin.testing.openai_server import DUMMY_API_KEY, server_process

WORLDS = [
    EpisodeKey(template=template, instance=0, focal_write=focal, fault_mode=mode)
    for template, focal in (("incident_open", "ticket"), ("release_announcement", "email"))
    for mode in ("timeout_post", "timeout_late", "http500_pre")
]
CONFIG = RunConfig(agent="litellm:openai/scripted")
_OPTIONS: dict[str, Any] = {}
REGISTRY = SpecRegistry.load(default_specs_dir())
"""Loaded at import, so forked workers inherit it."""


def _episode(index: int) -> tuple[int, str | None]:
    record = run_episode(WORLDS[index % len(WORLDS)], CONFIG, registry=REGISTRY,
                         agent_options=AgentOptions(**_OPTIONS))
    return (record.usage.model_calls if record.usage else 0), record.error


def _measure(executor: Executor, episodes: int) -> tuple[float, list[int]]:
    start = time.perf_counter()
    results = list(executor.map(_episode, range(episodes)))
    elapsed = time.perf_counter() - start
    errors = [e for _, e in results if e]
    if errors:
        raise RuntimeError(f"{len(errors)} episodes failed, e.g. {errors[0]}")
    return elapsed, [calls for calls, _ in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 8, 16])
    parser.add_argument("--mode", choices=("threads", "processes"), default="threads")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2,
                        help="episodes per worker at each level (default 2)")
    args = parser.parse_args()
    import_litellm()  # before forking: children inherit it instead of importing it each
    print(f"mode {args.mode}, model latency {args.latency * 1000:.0f} ms, "
          f"{os.cpu_count()} CPUs")
    with server_process("verify_first", latency_s=args.latency) as base_url:
        _OPTIONS.update({"model_options": {"api_base": base_url, "api_key": DUMMY_API_KEY,
                                           "timeout": 120},
                         "provider_retries": 3, "provider_backoff_s": 0.5})
        _episode(0)  # warm-up in the parent: spec caches, litellm's first-call set-up
        base_rate = None
        for workers in args.workers:
            episodes = max(4, workers * args.rounds)
            if args.mode == "threads":
                executor: Executor = ThreadPoolExecutor(workers)
            else:
                executor = ProcessPoolExecutor(workers,
                                               mp_context=multiprocessing.get_context("fork"))
            with executor:
                list(executor.map(_episode, range(workers)))  # warm every worker
                elapsed, calls = _measure(executor, episodes)
            rate = episodes / elapsed
            base_rate = base_rate or rate / workers
            per_episode = statistics.mean(calls)
            ideal = workers / (per_episode * args.latency)
            print(f"  {workers:3d} workers: {episodes:3d} episodes in {elapsed:6.2f} s = "
                  f"{rate:6.2f} episodes/s  (speedup {rate / base_rate:5.2f}×; latency-bound "
                  f"ideal {ideal:6.2f}/s; {per_episode:.1f} model calls/episode)")


if __name__ == "__main__":
    main()
