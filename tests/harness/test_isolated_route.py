"""The route for agents Limbo does not trust: a ``harness:command:`` agent runs in a process of
its own and reaches its episode only through MCP tool calls. From that process none of what an
in-process (``python:``) agent could touch is there: no world (and so no hidden outcome), no
fault plan, no grader state, no records path or specs directory in its environment, arguments or
working directories. (The file system itself is not sandboxed; docs/how-to/own-agent.md says so.)"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.openai_server import OpenAIServer

SPECS = Path(__file__).resolve().parents[2] / "specs"
REGISTRY = SpecRegistry.load(SPECS)
LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")

PROBE = """\
import gc, json, os, sys

found = {"pid": os.getpid(), "ppid": os.getppid(), "environ": dict(os.environ),
         "argv": sys.argv, "cwd": os.getcwd(), "cwd_files": sorted(os.listdir(".")),
         "home_files": sorted(os.listdir(os.environ["HOME"]))}
# What Limbo objects live in this process: none of the episode's, whatever it imports.
import limbo_plugin.world.world, limbo_plugin.records, limbo_plugin.faults  # noqa: E401
kinds = ("World", "EpisodeRecord", "FaultPlan", "FaultTransport", "Ledger")
found["limbo_objects"] = sorted({type(o).__name__ for o in gc.get_objects()
                                 if type(o).__name__ in kinds
                                 and type(o).__module__.startswith("limbo_plugin")})
with open(os.environ["LIMBO_PROBE_OUT"], "w") as out:
    json.dump(found, out)
"""


def test_from_the_isolated_route_the_episodes_state_is_out_of_reach(tmp_path: Path,
                                                                    model_server: OpenAIServer
                                                                    ) -> None:
    probe, out = tmp_path / "probe.py", tmp_path / "probe.json"
    probe.write_text(PROBE)
    records = tmp_path / "reports"
    adapter = tmp_path / "probe-agent.yaml"
    adapter.write_text(yaml.safe_dump({
        "name": "probe-agent", "model": "scripted",
        "env": {"LIMBO_PROBE_OUT": str(out)},
        "command": [sys.executable, str(probe), "{prompt}"], "grace_s": 10}))
    options = AgentOptions(model_options=model_server.model_options(),
                           reports_dir=str(records))
    record = run_episode(LOST_ACK, RunConfig(agent=f"harness:command:{adapter}"),
                         agent_options=options, registry=REGISTRY)
    assert record.harness is not None, record.error
    found = json.loads(out.read_text())
    assert found["pid"] != os.getpid()  # another process
    assert found["limbo_objects"] == []  # no world, record, fault plan or ledger there
    shown = json.dumps({k: found[k] for k in ("environ", "argv", "cwd")})
    for secret_place in (str(records), str(SPECS), str(Path.cwd())):
        assert secret_place not in shown, secret_place
    assert found["cwd_files"] == [] and found["home_files"] == []  # fresh, empty directories
    assert not any(name.startswith("LIMBO_") and name != "LIMBO_PROBE_OUT"
                   for name in found["environ"])
