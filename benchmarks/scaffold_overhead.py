"""Per-episode overhead of the litellm scaffold over the scripted agent it imitates.

The model is :class:`~limbo_plugin.testing.models.PolicyModel` serving ``verify_first`` from a
local OpenAI-compatible server with zero latency, in a child process (so its work does not share
the GIL with the episode). Both agents therefore make exactly the same tool calls on the same
worlds; the difference in wall time is what the scaffold costs: building requests, litellm, HTTP
on loopback, parsing, and the server's own replay of the policy. A third column replays the
recorded run from a cassette, which isolates the scaffold loop from litellm and the network.

    python benchmarks/scaffold_overhead.py --episodes 30

Prints one line per agent (median and quartiles of the per-episode wall time) and the median
overhead per episode and per model call.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir
from limbo_plugin.testing.openai_server import DUMMY_API_KEY, server_process

WORLDS = [
    EpisodeKey(template=template, instance=0, focal_write=focal, fault_mode=mode)
    for template, focal in (("incident_open", "ticket"), ("release_announcement", "email"))
    for mode in ("timeout_post", "timeout_late", "http500_pre")
]
MODEL = "openai/scripted"


def timed(run: Callable[[EpisodeKey], EpisodeRecord], keys: list[EpisodeKey]
          ) -> tuple[list[float], list[EpisodeRecord]]:
    times, records = [], []
    for key in keys:
        start = time.perf_counter()
        records.append(run(key))
        times.append(time.perf_counter() - start)
    return times, records


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return q1, q2, q3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--policy", default="verify_first")
    args = parser.parse_args()
    registry = SpecRegistry.load(default_specs_dir())
    keys = [WORLDS[i % len(WORLDS)] for i in range(args.episodes)]
    scripted_config = RunConfig(agent=f"scripted:{args.policy}")
    model_config = RunConfig(agent=f"litellm:{MODEL}")

    with server_process(args.policy) as base_url, tempfile.TemporaryDirectory() as cassette:
        live: dict[str, Any] = {"model_options": {"api_base": base_url,
                                                  "api_key": DUMMY_API_KEY}}
        recorded = {**live, "cassette": cassette, "cassette_mode": "record"}
        replay = {**live, "cassette": cassette, "cassette_mode": "replay"}
        for key in WORLDS:  # warm-up: imports, connection pool, spec caches; records cassette
            run_episode(key, scripted_config, registry=registry)
            run_episode(key, model_config, registry=registry,
                        agent_options=AgentOptions(**recorded))

        scripted_t, scripted_r = timed(
            lambda k: run_episode(k, scripted_config, registry=registry), keys)
        model_t, model_r = timed(
            lambda k: run_episode(k, model_config, registry=registry,
                                  agent_options=AgentOptions(**live)), keys)
        replay_t, _ = timed(
            lambda k: run_episode(k, model_config, registry=registry,
                                  agent_options=AgentOptions(**replay)),
            keys)

    for a, b in zip(scripted_r, model_r, strict=True):
        assert (a.duplicates, a.eos, a.behaviour) == (b.duplicates, b.eos, b.behaviour)
    calls = statistics.median(r.usage.model_calls for r in model_r if r.usage)
    print(f"{args.episodes} episodes over {len(WORLDS)} worlds, policy {args.policy}, "
          f"median {calls:.0f} model calls per episode")
    for name, times in (("scripted", scripted_t), ("scaffold (live, local server)", model_t),
                        ("scaffold (cassette replay)", replay_t)):
        q1, q2, q3 = quartiles(times)
        print(f"  {name:32s} median {q2 * 1000:8.2f} ms  (IQR {q1 * 1000:.2f}–{q3 * 1000:.2f})")
    overhead = statistics.median(m - s for m, s in zip(model_t, scripted_t, strict=True))
    replay_overhead = statistics.median(m - s for m, s in zip(replay_t, scripted_t, strict=True))
    print(f"  overhead per episode (median of paired differences): {overhead * 1000:.1f} ms, "
          f"{overhead / calls * 1000:.1f} ms per model call")
    print(f"  of which outside litellm/HTTP (replay): {replay_overhead * 1000:.1f} ms per "
          f"episode")


if __name__ == "__main__":
    main()
