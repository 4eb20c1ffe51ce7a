"""Episodes per second of the litellm scaffold with 1, 2, 8 and 16 concurrent workers.

The model answers every call after 200 ms (a local OpenAI-compatible server in a child process
serving the ``verify_first`` policy), so a single worker is latency-bound and concurrency should
help until the client side (litellm, the OpenAI SDK, JSON) saturates the CPU. Workers are
threads in one process (``--mode threads``: one GIL, like a single pytest process), processes
forked after litellm is imported (``--mode processes``: the episodes alone), or real
``pytest -n N`` runs (``--mode pytest``: each xdist worker a fresh process that imports the
plugin and litellm itself, as a study runs).

    python benchmarks/scaffold_scaling.py --workers 1 2 8 16 --mode threads
    python benchmarks/scaffold_scaling.py --workers 1 2 8 16 --mode processes --rounds 6
    python benchmarks/scaffold_scaling.py --workers 1 2 8 16 --mode pytest --rounds 6

For each level it prints episodes/s, the speedup over one worker and the latency-bound ideal
(workers / (model calls per episode × latency)). In ``pytest`` mode it also splits the wall time
into start-up (until the first record reaches the file) and the steady state (the rate between
the first and the last record), which tells process start-up from per-call work.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
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


def _pytest_level(workers: int, episodes_per_worker: int, base_url: str, tmp: Path
                  ) -> tuple[float, float, float, int, float, float]:
    """One ``pytest -n workers`` run: wall s, start-up s, steady episodes/s, episodes, model
    calls per episode, CPU seconds of the whole process tree."""
    instances = max(1, -(-workers * episodes_per_worker // len(WORLDS)))
    project = tmp / f"n{workers}"
    shutil.copytree(REGISTRY.root, project / "specs")
    worlds = sorted({(k.template, k.focal_write) for k in WORLDS})
    (project / "specs" / "experiments" / "scaling.yaml").write_text(
        f"name: scaling\ntemplates: {sorted({t for t, _ in worlds})}\n"
        f"instances: {list(range(instances))}\nfocal_writes: {sorted({f for _, f in worlds})}\n"
        f"modes: {sorted({k.fault_mode for k in WORLDS})}\n")
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = specs\n"
                                        "addopts = -p no:cacheprovider\n")
    records = project / "records.jsonl"
    command = [sys.executable, "-m", "pytest", "-q", "--tb=no", "--experiment", "scaling",
               f"--agent={CONFIG.agent}", f"--model-option=api_base={base_url}",
               f"--model-option=api_key={DUMMY_API_KEY}", "--model-option=timeout=120",
               f"--limbo-records={records}"] + (["-n", str(workers)] if workers > 1 else [])
    arrivals: list[float] = []
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    seen = 0
    while True:
        pid, _, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.02)
        count = records.read_bytes().count(b"\n") if records.exists() else 0
        arrivals += [time.perf_counter() - start] * (count - seen)
        seen = count
    process.returncode = 0  # reaped by wait4 above
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime  # the controller and every worker it waited for
    lines = records.read_text().splitlines()
    arrivals += [wall] * (len(lines) - seen)
    calls = statistics.mean(json.loads(line)["usage"]["model_calls"] for line in lines)
    first, last = arrivals[0], arrivals[-1]
    steady = (len(arrivals) - 1) / (last - first) if last > first else float("nan")
    return wall, first, steady, len(lines), calls, cpu


def pytest_mode(workers_levels: list[int], rounds: int, latency: float) -> None:
    with server_process("verify_first", latency_s=latency) as base_url, \
            tempfile.TemporaryDirectory() as name:
        base = None
        for workers in workers_levels:
            wall, first, steady, episodes, calls, cpu = _pytest_level(workers, rounds,
                                                                      base_url, Path(name))
            rate = episodes / wall
            base = base or (rate, steady)
            ideal = workers / (calls * latency)
            print(f"  -n {workers:2d}: {episodes:3d} episodes in {wall:6.2f} s = {rate:5.2f}/s "
                  f"(speedup {rate / base[0]:5.2f}×); start-up {first:5.2f} s, steady "
                  f"{steady:5.2f}/s (speedup {steady / base[1]:5.2f}×; ideal {ideal:5.2f}/s); "
                  f"CPU {cpu:5.1f} s = {cpu / episodes:4.2f} s/episode, "
                  f"{cpu / wall / (os.cpu_count() or 1):4.0%} of the machine",
                  flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 8, 16])
    parser.add_argument("--mode", choices=("threads", "processes", "pytest"), default="threads")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=2,
                        help="episodes per worker at each level (default 2)")
    args = parser.parse_args()
    print(f"mode {args.mode}, model latency {args.latency * 1000:.0f} ms, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    if args.mode == "pytest":
        pytest_mode(args.workers, args.rounds, args.latency)
        return
    import_litellm()  # before forking: children inherit it instead of importing it each
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
