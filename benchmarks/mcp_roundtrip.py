"""What the harness path costs: one ``tools/call`` through MCP → HTTP → world, side by side.

In one run, in interleaved rounds (so machine load hits every path alike), it times the same
tool call (``wait``: cheap world work) along four paths:

- ``in-process``: ``AgentSession.call`` — condition, trace, fault transport, world;
- ``http``: the sandbox service's client → loopback HTTP → the same session;
- ``mcp -> http -> world``: the official SDK client → stdio → ``limbo mcp`` → HTTP → session;
- ``bare mcp (echo)``: the official SDK client → stdio → a low-level SDK server whose one tool
  echoes its arguments — what any MCP round trip costs, with no Limbo in it.

It also times the sandbox service's lifecycle (a server per episode against one per worker with a
fresh token per episode), one ``mcp:verify_first`` episode against the in-process policy, and —
unless ``--no-harness`` — one lost-ack episode per installed production CLI, with
``verify_first`` playing the model from the scripted model server.

    python benchmarks/mcp_roundtrip.py [--calls 300] [--rounds 5] [--harness-episodes 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.client import SandboxClient
from limbo_plugin.server.launch import mcp_launch
from limbo_plugin.server.sandbox_http import SandboxServer
from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir

REGISTRY = SpecRegistry.load(default_specs_dir())

LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
ARGS = {"seconds": 1}
ECHO_SERVER = textwrap.dedent('''
    import anyio, json
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[types.Tool(
            name="wait", description="echo", input_schema={"type": "object"})])

    async def call_tool(ctx, params):
        return types.CallToolResult(content=[types.TextContent(
            type="text", text=json.dumps(params.arguments))])

    async def main():
        server = Server("echo", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())

    anyio.run(main)
''')


class Probe:
    """An agent that hands its session to a benchmark body."""

    name = "probe"

    def __init__(self, body: Callable[[AgentSession], Any]) -> None:
        self.body = body
        self.result: Any = None

    def run(self, session: AgentSession) -> None:
        session.budget = 10**9  # a benchmark, not an episode: no call budget
        self.result = self.body(session)


def in_episode(body: Callable[[AgentSession], Any]) -> Any:
    probe = Probe(body)
    run_episode(LOST_ACK, RunConfig(), agent=probe, registry=REGISTRY)
    return probe.result


def time_calls(call: Callable[[], Any], n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


async def time_mcp_calls(client: Any, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await client.call_tool("wait", ARGS)
        times.append(time.perf_counter() - start)
    return times


def stdio_client_for(command: str, args: list[str], env: dict[str, str]) -> Any:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    return Client(stdio_client(StdioServerParameters(command=command, args=args, env=env)),
                  read_timeout_seconds=60)


def round_trips(calls: int, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"in-process": [], "http": [],
                                       "mcp -> http -> world": [], "bare mcp (echo)": []}
    with tempfile.TemporaryDirectory() as tmp, SandboxServer() as sandbox:
        echo = Path(tmp) / "echo_server.py"
        echo.write_text(ECHO_SERVER)

        def body(session: AgentSession) -> None:
            with sandbox.episode(session) as lease:
                http = SandboxClient(lease.url, lease.token)
                launch = mcp_launch(lease.url, lease.token)

                async def main() -> None:
                    async with stdio_client_for(launch.command, list(launch.args),
                                                launch.env) as limbo, \
                            stdio_client_for(sys.executable, [str(echo)], {}) as bare:
                        for client in (limbo, bare):  # warm up both
                            await time_mcp_calls(client, 20)
                        for _ in range(rounds):
                            samples["in-process"] += await anyio.to_thread.run_sync(
                                time_calls, lambda: session.call("wait", ARGS), calls)
                            samples["http"] += await anyio.to_thread.run_sync(
                                time_calls, lambda: http.call("wait", ARGS), calls)
                            samples["mcp -> http -> world"] += await time_mcp_calls(limbo, calls)
                            samples["bare mcp (echo)"] += await time_mcp_calls(bare, calls)

                anyio.run(main)
                http.close()

        in_episode(body)
    return samples


def lifecycle(episodes: int) -> dict[str, list[float]]:
    """Per-episode cost of a server per episode against a shared one with a fresh token."""
    samples: dict[str, list[float]] = {"server per episode": [], "shared server, new token": []}
    shared = SandboxServer().start()

    def body(session: AgentSession) -> None:
        for _ in range(episodes):
            start = time.perf_counter()
            server = SandboxServer().start()
            with server.episode(session) as lease:
                client = SandboxClient(lease.url, lease.token)
                client.list_tools()
                client.close()
            server.stop()
            samples["server per episode"].append(time.perf_counter() - start)

            start = time.perf_counter()
            with shared.episode(session) as lease:
                client = SandboxClient(lease.url, lease.token)
                client.list_tools()
                client.close()
            samples["shared server, new token"].append(time.perf_counter() - start)

    in_episode(body)
    shared.stop()
    return samples


def episodes(n: int, with_harness: bool) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {}

    def timed(label: str, run: Callable[[], Any]) -> None:
        for _ in range(n):
            start = time.perf_counter()
            record = run()
            elapsed = time.perf_counter() - start
            if record.error is not None:
                print(f"  {label}: {record.error}", file=sys.stderr)
                return
            samples.setdefault(label, []).append(elapsed)

    timed("scripted:verify_first (in process)",
          lambda: run_episode(LOST_ACK, RunConfig(agent="scripted:verify_first"),
                              registry=REGISTRY))
    timed("mcp:verify_first", lambda: run_episode(LOST_ACK, RunConfig(agent="mcp:verify_first"),
                                                  registry=REGISTRY))
    if not with_harness:
        return samples
    from limbo_plugin.agents.harness_install import BUILT_IN, find_harness, installed_executable
    from limbo_plugin.testing.models import PolicyModel
    from limbo_plugin.testing.openai_server import OpenAIServer

    with OpenAIServer(PolicyModel("verify_first", registry=REGISTRY, max_instance=1)) as server, \
            tempfile.TemporaryDirectory() as reports:
        options = AgentOptions(model_options=server.model_options(), reports_dir=reports)
        for name in BUILT_IN:
            if installed_executable(find_harness(name)) is None:
                print(f"  {name}: not installed (limbo harness install {name})", file=sys.stderr)
                continue
            timed(f"harness:{name}", lambda name=name: run_episode(
                LOST_ACK, RunConfig(agent=f"harness:{name}:scripted"), agent_options=options,
                registry=REGISTRY))
    return samples


def describe(values: list[float], unit: float, suffix: str) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (f"median {statistics.median(values) / unit:8.3f} {suffix}   "
            f"p95 {p95 / unit:8.3f} {suffix}   (n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per path per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lifecycle-episodes", type=int, default=200)
    parser.add_argument("--harness-episodes", type=int, default=3)
    parser.add_argument("--no-harness", action="store_true",
                        help="skip the production CLIs (they take seconds per episode)")
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average at start: {load:.2f}")

    print("\ntools/call round trip (the same `wait` call on every path):")
    trips = round_trips(args.calls, args.rounds)
    for label, values in trips.items():
        print(f"  {label:24} {describe(values, 1e-3, 'ms')}")
    base = statistics.median(trips["in-process"])
    full = statistics.median(trips["mcp -> http -> world"])
    bare = statistics.median(trips["bare mcp (echo)"])
    print(f"  MCP path over in-process: +{(full - base) * 1e3:.3f} ms a call; "
          f"over the bare SDK round trip: +{(full - bare) * 1e3:.3f} ms")

    print("\nsandbox service lifecycle, per episode:")
    for label, values in lifecycle(args.lifecycle_episodes).items():
        print(f"  {label:26} {describe(values, 1e-3, 'ms')}")

    print("\none lost-ack episode (incident_open, 5 tool calls), wall time:")
    for label, values in episodes(args.harness_episodes, not args.no_harness).items():
        print(f"  {label:36} {describe(values, 1.0, 's')}")


if __name__ == "__main__":
    main()
