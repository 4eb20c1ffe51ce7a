"""The framework recipes of ``examples/agents/`` — OpenAI Agents SDK, LangGraph, PydanticAI —
each run as a team would run it: the framework in its own virtual environment, its tools from
the episode's ``limbo mcp`` endpoint, its model the scripted model server playing a policy.

A recipe is faithful when its records on the lost-ack and late-commit episodes equal the
in-process ``scripted:<policy>``'s except for the agent's name and usage, when every tool answer
reaches the model as the session gave it (a rewrite is a finding, pinned below and named in the
recipe's README), and when a provider outage is an infrastructure error, not a graded failure.

A recipe whose environment is not installed (``limbo harness install <adapter>``; ``.ci/run``
does it) is skipped with the reason shown, never passed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.agents.harness_install import cache_root, find_harness, installed_executable
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import FailingModel, PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = SpecRegistry.load(ROOT / "specs")
RECIPES = {
    "openai-agents": ROOT / "examples" / "agents" / "openai_agents" / "openai-agents.yaml",
    "langgraph": ROOT / "examples" / "agents" / "langgraph" / "langgraph.yaml",
    "pydantic-ai": ROOT / "examples" / "agents" / "pydantic_ai" / "pydantic-ai.yaml",
}
LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
LATE_COMMIT = EpisodeKey(template="release_announcement", instance=0, focal_write="email",
                         fault_mode="timeout_late")
API_KEY = "sk-canary-never-in-a-transcript"
WRAPS_TOOL_ERRORS = {"pydantic-ai"}
"""Frameworks that hand a tool error to the model re-encoded (a finding, in their README):
PydanticAI gives it as ``{"error": "<the server's text as a JSON string>"}``."""
MODEL_REQUEST_TRIES = 3
"""Each framework's OpenAI client retries a failed model request twice on its own (the SDK's
``max_retries=2``) before the failure reaches the agent: three requests per model call."""


def _adapter(name: str) -> str:
    spec = find_harness(str(RECIPES[name]))
    if installed_executable(spec) is None:
        assert spec.install is not None
        pytest.skip(f"{name} recipe ({spec.install.package}) is not installed in {cache_root()}:"
                    f" `limbo harness install {RECIPES[name].relative_to(ROOT)}` failed or was "
                    "not run")
    return f"harness:command:{RECIPES[name]}"


def _run(agent: str, key: EpisodeKey, server: OpenAIServer, reports: Path,
         **options: Any) -> EpisodeRecord:
    model_options = {**server.model_options(), "model": "scripted", "api_key": API_KEY,
                     **options}
    return run_episode(key, RunConfig(agent=agent), registry=REGISTRY,
                       agent_options=AgentOptions(model_options=model_options,
                                                  reports_dir=str(reports)))


def _graded(record: EpisodeRecord) -> dict[str, object]:
    return record.model_dump(exclude={"agent", "test_id", "usage", "harness"})


def _tool_messages(server: OpenAIServer) -> list[str]:
    """The tool answers in the model's last request, as the text the model read."""
    texts = []
    for message in server.requests[-1].body["messages"]:
        if message.get("role") == "tool":
            content = message["content"]
            texts.append(content if isinstance(content, str)
                         else "".join(block.get("text", "") for block in content))
    return texts


def _as_given(text: str, wrapped: bool) -> Any:
    """A tool answer decoded back to what the session gave (undoing a documented rewrite)."""
    value = json.loads(text)
    if wrapped and isinstance(value, dict) and set(value) == {"error"}:
        assert isinstance(value["error"], str), "the documented rewrite quotes the error"
        value = json.loads(value["error"])
    return value


@pytest.mark.early
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipe_is_a_faithful_conduit_for_both_policies(
        name: str, model_server: OpenAIServer, tmp_path: Path) -> None:
    agent = _adapter(name)
    outcomes = {}
    for policy in ("blind_retry", "verify_first"):
        for key in (LOST_ACK, LATE_COMMIT):
            model_server.model = PolicyModel(policy, registry=REGISTRY, max_instance=1)
            before = len(model_server.requests)
            record = _run(agent, key, model_server, tmp_path)
            assert record.error is None, record.error
            reference = run_episode(key, RunConfig(agent=f"scripted:{policy}"),
                                    registry=REGISTRY)
            assert _graded(record) == _graded(reference), (name, policy, key.id)
            # usage: one line per model request, every request the gateway saw
            assert record.usage is not None
            assert record.usage.model_calls == len(model_server.requests) - before > 0
            assert record.usage.prompt_tokens > 0 and record.usage.completion_tokens > 0
            # what the model read is what the session answered, call for call; an error
            # is rewritten only where the recipe's README says so
            calls = [entry for entry in record.trace if entry.origin == "agent"]
            texts = _tool_messages(model_server)
            assert len(texts) in (len(calls), len(calls) - 1), name
            for entry, text in zip(calls, texts, strict=False):
                assert _as_given(text, name in WRAPS_TOOL_ERRORS) == entry.response, name
                if entry.is_error:
                    assert (json.loads(text) == entry.response) == (
                        name not in WRAPS_TOOL_ERRORS), (name, text)
            assert record.harness is not None and record.harness.tool_listings >= 1
            assert API_KEY not in record.model_dump_json()
            outcomes[policy, key.fault_mode] = (record.duplicates, record.eos)
    assert outcomes["blind_retry", "timeout_post"] == (1, False)
    assert outcomes["verify_first", "timeout_post"] == (0, True)
    assert outcomes["verify_first", "timeout_late"] == (1, False)  # verification cannot see it
    readme = (RECIPES[name].parent / "README.md").read_text(encoding="utf-8")
    assert ("Tool errors are re-encoded" in readme) == (name in WRAPS_TOOL_ERRORS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_provider_outage_is_an_infrastructure_error(
        name: str, model_server: OpenAIServer, tmp_path: Path) -> None:
    agent = _adapter(name)
    model_server.model = FailingModel(500)
    record = _run(agent, LOST_ACK, model_server, tmp_path)
    assert record.error is not None and record.error.startswith("infrastructure error: ")
    assert f"the model gateway {model_server.base_url.rstrip('/')}" in record.error
    assert '"limbo": "model_error"' in record.error and "500" in record.error
    assert len(model_server.requests) == MODEL_REQUEST_TRIES
    assert record.tool_calls == 0
    absent = _run(agent, LOST_ACK, model_server, tmp_path, api_base="http://127.0.0.1:9/v1")
    assert absent.error is not None and "the model gateway http://127.0.0.1:9/v1 failed" in \
        absent.error and "Connection error" in absent.error
