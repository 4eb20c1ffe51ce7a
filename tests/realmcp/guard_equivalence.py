"""``limbo guard`` around Limbo's own sandbox MCP server against ``--condition guard``.

The same policy (``mcp:blind_retry``) on the same episode twice: once with the benchmark's guard
inside the episode (condition ``guard``), once with no condition and ``limbo guard`` between the
policy and ``limbo mcp``. The guard's configuration is ``limbo audit --json`` of the sandbox
server with the edits its docs would give a user (each write's read-back query, intent fields,
batch argument; ``wait_tool: wait`` since the sandbox's clock is simulated).

Run as a script it prints the figures over the default experiment's lost-ack and late-commit
episodes: ``python tests/realmcp/guard_equivalence.py [STRIDE]`` (every STRIDE-th episode).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realkit import REGISTRY, audit_json, catalogue_server

from limbo_plugin.agents.base import AgentSession
from limbo_plugin.agents.mcp_agent import _drive
from limbo_plugin.agents.scripted import ScriptedAgent
from limbo_plugin.episode import run_episode
from limbo_plugin.experiments import find_experiment, load_experiment
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.launch import mcp_launch
from limbo_plugin.server.sandbox_http import shared_sandbox

OUTCOME_FIELDS = ("fired", "ts", "eos", "duplicates", "residual_duplicates", "collateral",
                  "unrequested", "overclaim", "final_status")
"""What the grade says about an episode, and its ledger below. Not the trace nor the behaviour
code read from it: inside the episode the benchmark's guard is below the trace, so the trace
shows the agent's own call; ``limbo guard`` is a separate process in front of the sandbox, which
therefore sees the call with the guard's key attached (and the guard's read-backs and waits) as
the agent's, and codes a key-pinned blind retry as ``retry_same_key``."""
FAMILIES = ("lost_ack", "late_commit")


def sandbox_guard_config(contract: str = "native") -> dict[str, Any]:
    """The audit of the sandbox server, with each write's read-back as its docs state it."""
    with catalogue_server(contract) as (command, env):
        _, document = audit_json(command, env)
    catalog = REGISTRY.catalog(contract)
    for row in document["tools"]:
        truth = catalog.tools[row["tool"]].contract
        if not row["writes"]:
            continue
        row["intent"] = list(truth.intent_fields)
        row["batch"] = truth.batch_field
        row["noun"] = truth.record_noun
        row["verify"] = (truth.read_back.model_dump(exclude_none=True)
                         if truth.read_back else None)
    document["wait_tool"] = "wait"
    return document


class GuardedPolicy:
    """``mcp:<policy>`` whose MCP server is ``limbo guard -- [THROUGH…] limbo mcp …`` (or,
    with ``config=None``, no guard: ``THROUGH… limbo mcp …``)."""

    def __init__(self, policy: str, config: Path | None, through: Sequence[str] = ()) -> None:
        self.policy, self.config, self.through = policy, config, list(through)
        self.name = f"mcp:{policy}"

    def run(self, session: AgentSession) -> None:
        with shared_sandbox().episode(session) as lease, tempfile.TemporaryFile("w+") as log:
            launch = mcp_launch(lease.url, lease.token)
            inner = ([sys.executable, *self.through] if self.through else []) + launch.argv
            if self.config is not None:
                inner = [sys.executable, "-m", "limbo_plugin.cli", "guard", "--config",
                         str(self.config), "--allow-missing", "--", *inner]
            outcome = _drive(inner[0], inner[1:], launch.env, log,
                             lambda remote: ScriptedAgent(self.policy).run(remote), session)
        if lease.failure is not None:
            raise lease.failure
        if outcome is not None:
            raise outcome


def outcome(record: EpisodeRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json")
    fields = {name: data.get(name) for name in (*OUTCOME_FIELDS, "behaviour")}
    fields["ledger"] = [(e["tool"], len(e["record_ids"]), e.get("undone_at") is not None)
                        for e in data["ledger"]]
    return fields


def compare(key: EpisodeKey, config: Path, policy: str = "blind_retry"
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    from limbo_plugin.agents.mcp_agent import McpPolicyAgent

    agent = f"mcp:{policy}"
    inside = run_episode(key, RunConfig(agent=agent, condition="guard"), registry=REGISTRY,
                         agent=McpPolicyAgent(policy))
    outside = run_episode(key, RunConfig(agent=agent, condition="vanilla"), registry=REGISTRY,
                          agent=GuardedPolicy(policy, config))
    return outcome(inside), outcome(outside)



def episodes() -> list[EpisodeKey]:
    experiment = load_experiment(find_experiment("default", REGISTRY), REGISTRY)
    return [key for key in experiment.worlds(REGISTRY)
            if REGISTRY.fault_mode(key.fault_mode).family in FAMILIES]


if __name__ == "__main__":
    stride = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "guard.json"
        path.write_text(json.dumps(sandbox_guard_config()))
        same = differ = behaviour = 0
        for key in episodes()[::stride]:
            a, b = compare(key, path)
            behaviour += a.pop("behaviour") != b.pop("behaviour")
            if a == b:
                same += 1
                print(f"same {key.template}-i{key.instance}-{key.focal_write}-"
                      f"{key.fault_mode}: duplicates {a['duplicates']}, eos {a['eos']}",
                      flush=True)
            else:
                differ += 1
                diff = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
                print(f"DIFF {key.template}-i{key.instance}-{key.focal_write}-"
                      f"{key.fault_mode}: {diff}", flush=True)
        print(f"identical outcomes: {same} of {same + differ}; behaviour code differs in "
              f"{behaviour}")
