"""``from limbo_plugin import …``: the documented names resolve, lazily, and an agent written
against them satisfies the protocol."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import limbo_plugin
from limbo_plugin import AgentSession, ToolResult
from limbo_plugin.spec.registry import SpecRegistry

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[1] / "specs")


def test_every_documented_name_resolves() -> None:
    for name in limbo_plugin.__all__:
        assert getattr(limbo_plugin, name) is not None, name
    assert set(limbo_plugin.__all__) <= set(dir(limbo_plugin))
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        limbo_plugin.Nope  # noqa: B018


def test_importing_the_package_stays_cheap() -> None:
    code = ("import sys, limbo_plugin; heavy = [m for m in ('litellm', 'mcp', 'pydantic', "
            "'limbo_plugin.agents') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


class Finisher:
    """An agent written against the public API only (built by ``python:test_public_api:…``)."""

    name = "finisher"

    def run(self, session: AgentSession) -> None:
        result = session.call("finish", '{"status": "failed", "summary": "no", '
                                        '"uncertain_operations": []}')
        assert isinstance(result, ToolResult) and not result.is_error


def test_an_agent_written_against_the_public_api_is_an_agent_and_runs() -> None:
    from limbo_plugin import Agent, EpisodeKey, RunConfig, run_episode

    assert isinstance(Finisher(), Agent)
    key = EpisodeKey(template="incident_open", instance=0, focal_write="baseline",
                     fault_mode="none")
    record = run_episode(key, RunConfig(agent="python:test_public_api:Finisher"),
                         registry=REGISTRY)
    assert record.agent == "python:test_public_api:Finisher"
    assert record.final_status == "failed" and record.trace[0].arguments["status"] == "failed"
