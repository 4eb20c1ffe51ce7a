"""Shared helpers of the scaffold tests: worlds, and running one model-backed episode (against
the ``openai_server`` fixture of tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.openai_server import OpenAIServer

MODEL = "openai/scripted"
AGENT = f"litellm:{MODEL}"

WORLDS = [
    EpisodeKey(template=template, instance=0, focal_write=focal, fault_mode=mode)
    for template, focal in (("incident_open", "ticket"), ("release_announcement", "email"))
    for mode in ("timeout_post", "timeout_late", "http500_pre")
]
"""Two templates (a strongly consistent and an eventually consistent read-back) under a lost
acknowledgement, a late commit and a clean failure: the scripted policies' outcomes differ across
them, so matching outcomes means the scaffold passed every call and result through faithfully."""

FAULT_FREE = EpisodeKey(template="incident_open", instance=0, focal_write="baseline",
                        fault_mode="none")


def options_for(server: OpenAIServer, **extra: Any) -> dict[str, Any]:
    return {"model_options": server.model_options(), "provider_retries": 8,
            "provider_backoff_s": 0.01, **extra}


def run_model(registry: SpecRegistry, key: EpisodeKey, server: OpenAIServer, *,
              condition: str = "vanilla", instruction: str = "default", model: str = MODEL,
              **options: Any) -> EpisodeRecord:
    """One episode of the scaffold against ``server`` (whose model the caller has set)."""
    config = RunConfig(agent=f"litellm:{model}", condition=condition, instruction=instruction)
    return run_episode(key, config, registry=registry,
                       agent_options=AgentOptions(**options_for(server, **options)))


def outcome(record: EpisodeRecord) -> dict[str, Any]:
    """What the grader concluded, without the fields that name the agent or its cost."""
    return record.model_dump(exclude={"agent", "test_id", "usage"})
