"""End to end with the real production CLIs — Codex, Copilot, Hermes — each launching the real
``limbo mcp``, with a scripted policy playing the model behind it through the scripted model
server. Graded like any other episode: a harness is a faithful conduit exactly when each episode
reaches the in-process policy's ledger, trace and grade.

A CLI that is not installed (``limbo harness install``; ``.ci/run`` does it) is skipped with the
reason shown, never passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from limbo_plugin.agents.harness_catalog import harness_catalog, is_known, model_entry
from limbo_plugin.agents.harness_install import (
    BUILT_IN,
    cache_root,
    find_harness,
    installed_executable,
)
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import FailingModel, PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

LOST_ACK = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                      fault_mode="timeout_post")
API_KEY = "sk-canary-never-in-a-transcript"
LATE_COMMIT = EpisodeKey(template="release_announcement", instance=0, focal_write="email",
                         fault_mode="timeout_late")


def _require(name: str) -> None:
    spec = find_harness(name)
    if installed_executable(spec) is None:
        assert spec.install is not None
        pytest.skip(f"{name} CLI ({spec.install.package}) is not installed in {cache_root()}: "
                    f"`limbo harness install {name}` failed or was not run")


def _episode(name: str, policy: str, key: EpisodeKey, server: OpenAIServer, reports: Path,
             condition: str = "vanilla") -> EpisodeRecord:
    server.model = PolicyModel(policy, registry=REGISTRY, max_instance=1)
    options = AgentOptions(model_options={**server.model_options(), "api_key": API_KEY},
                           reports_dir=str(reports))
    return run_episode(key, RunConfig(agent=f"harness:{name}:scripted", condition=condition),
                       agent_options=options, registry=REGISTRY)


def _graded(record: EpisodeRecord) -> dict[str, object]:
    return record.model_dump(exclude={"agent", "test_id", "usage", "harness"})


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILT_IN)
def test_blind_retry_duplicates_a_lost_ack_and_verify_first_does_not(
        name: str, model_server: OpenAIServer, tmp_path: Path) -> None:
    _require(name)
    outcomes = {}
    for policy in ("blind_retry", "verify_first"):
        for key in (LOST_ACK, LATE_COMMIT):
            before = len(model_server.requests)
            record = _episode(name, policy, key, model_server, tmp_path)
            assert record.error is None, record.error
            # one model call per request the gateway saw (Codex's usage events are per turn)
            assert record.usage is not None
            assert record.usage.model_calls == len(model_server.requests) - before, name
            reference = run_episode(key, RunConfig(agent=f"scripted:{policy}"), registry=REGISTRY)
            assert _graded(record) == _graded(reference), (name, policy, key.id)
            assert record.harness is not None and record.harness.tool_listings >= 1
            assert record.usage is not None and record.usage.prompt_tokens > 0
            transcript = Path(record.harness.transcript or "")
            assert transcript.is_dir() and any(transcript.iterdir())
            assert not any(API_KEY in f.read_text(errors="replace")
                           for f in transcript.iterdir()), "the gateway key leaked"
            assert API_KEY not in record.model_dump_json()
            outcomes[policy, key.fault_mode] = (record.duplicates, record.eos)
    assert outcomes["blind_retry", "timeout_post"] == (1, False)
    assert outcomes["verify_first", "timeout_post"] == (0, True)
    # a late commit defeats verification on a key-less write: both duplicate
    assert outcomes["verify_first", "timeout_late"] == (1, False)
    assert outcomes["blind_retry", "timeout_late"] == (1, False)


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILT_IN)
def test_the_guard_in_the_sandbox_protects_a_blind_harness(
        name: str, model_server: OpenAIServer, tmp_path: Path) -> None:
    _require(name)
    record = _episode(name, "blind_retry", LOST_ACK, model_server, tmp_path, condition="guard")
    reference = run_episode(LOST_ACK, RunConfig(agent="scripted:blind_retry", condition="guard"),
                            registry=REGISTRY)
    assert record.error is None, record.error
    assert _graded(record) == _graded(reference)
    assert record.harness_calls > 0 and record.duplicates == 0 and record.eos


def test_a_harness_whose_mcp_server_cannot_start_is_an_infrastructure_error(
        model_server: OpenAIServer, tmp_path: Path) -> None:
    _require("codex")
    spec = find_harness("codex").model_copy()
    text = Path(spec.file).read_text().replace('command: "{mcp_command}"',
                                               'command: "/nonexistent/limbo-mcp"')
    broken = tmp_path / "codex-broken.yaml"
    broken.write_text(text)
    model_server.model = PolicyModel("verify_first", registry=REGISTRY, max_instance=1)
    options = AgentOptions(model_options={**model_server.model_options(), "model": "scripted"},
                           reports_dir=str(tmp_path))
    record = run_episode(LOST_ACK, RunConfig(agent=f"harness:command:{broken}"),
                         agent_options=options, registry=REGISTRY)
    assert record.error is not None and "its tools never loaded" in record.error
    assert record.harness is not None and record.harness.tool_listings == 0
    assert record.tool_calls == 0


def test_a_gateway_that_keeps_failing_is_an_infrastructure_error_not_a_graded_failure(
        model_server: OpenAIServer, tmp_path: Path) -> None:
    """Codex gives up after its retries and exits; its transcript says why (turn.failed)."""
    _require("codex")
    model_server.model = FailingModel(500)
    options = AgentOptions(model_options=model_server.model_options(), reports_dir=str(tmp_path))
    record = run_episode(LOST_ACK, RunConfig(agent="harness:codex:scripted"),
                         agent_options=options, registry=REGISTRY)
    assert record.error is not None and "failed: " in record.error
    assert f"the model gateway {model_server.base_url.rstrip('/')}" in record.error
    assert record.harness is not None and record.harness.tool_listings == 1


@pytest.mark.slow
def test_codex_on_an_unreachable_gateway_is_stopped_early_naming_it(tmp_path: Path) -> None:
    """Codex prints "Reconnecting... waiting for network" and never gives up; the runner
    watches its events while it runs and stops it long before the wall-clock limit."""
    _require("codex")
    dead = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    options = AgentOptions(model_options={"api_base": dead, "timeout_s": 600},
                           reports_dir=str(tmp_path))
    record = run_episode(LOST_ACK, RunConfig(agent="harness:codex:scripted"),
                         agent_options=options, registry=REGISTRY)
    assert record.error is not None and f"the model gateway {dead} failed" in record.error
    assert "Reconnecting" in record.error
    assert record.harness is not None and not record.harness.timed_out
    assert record.harness.wall_s < 300



@pytest.mark.slow
def test_codex_sends_its_own_instructions_for_a_model_it_knows(
        model_server: OpenAIServer, tmp_path: Path) -> None:
    """The paper asks what the harness contributes, and its system prompt is part of it: for a
    model Codex knows, the instructions Codex itself ships for that model (``codex debug
    models``) reach the model server, and the tools it may offer are still restricted."""
    _require("codex")
    known = "gpt-5.5"
    spec = find_harness("codex")
    installed = installed_executable(spec)
    assert installed is not None
    executable = str(installed)
    shipped = next(entry["base_instructions"] for entry in harness_catalog(spec, executable)
                   if entry["slug"] == known)
    assert len(shipped) > 5000  # Codex's own prompt, not a one-line stand-in
    model_server.model = PolicyModel("verify_first", registry=REGISTRY, max_instance=1)
    options = AgentOptions(model_options=model_server.model_options(), reports_dir=str(tmp_path))
    record = run_episode(LOST_ACK, RunConfig(agent=f"harness:codex:{known}"),
                         agent_options=options, registry=REGISTRY)
    assert record.error is None, record.error
    assert record.eos
    first = model_server.requests[0].raw or {}
    sent = [part.get("text", "") for item in first.get("input", [])
            if item.get("role") in ("developer", "system")
            for part in item.get("content", []) if isinstance(part, dict)]
    sent.append(str(first.get("instructions") or ""))
    assert any(shipped in text for text in sent), "Codex's own instructions did not arrive"
    offered = {str(t.get("name") or t.get("type")) for t in first.get("tools", [])}
    assert "mcp__acme" in offered
    assert not offered & {"view_image", "request_user_input", "shell", "exec_command",
                          "apply_patch", "web_search", "update_plan"}, offered


@pytest.mark.slow
def test_codex_uses_the_fallback_entry_only_for_a_model_it_does_not_know(
        model_server: OpenAIServer, tmp_path: Path) -> None:
    _require("codex")
    spec = find_harness("codex")
    installed = installed_executable(spec)
    assert installed is not None
    executable = str(installed)
    assert is_known(spec, executable, "gpt-5.5") and not is_known(spec, executable, "scripted")
    entry = model_entry(spec, executable, "scripted")
    assert entry is not None and entry["slug"] == "scripted"
    assert spec.model_catalog is not None
    assert entry["base_instructions"] == spec.model_catalog.fallback["base_instructions"]
    known = model_entry(spec, executable, "gpt-5.5")
    assert known is not None and known["base_instructions"] != entry["base_instructions"]
    assert known["experimental_supported_tools"] == []  # the overrides apply
