"""The harness runner, with a small MCP CLI whose behaviour each test picks: isolation, the
wall-clock limit, stopping a CLI that lingers, infrastructure errors judged from the sandbox's
log, usage and transcripts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.prompts import HARNESS_PREAMBLE
from limbo_plugin.episode import run_episode
from limbo_plugin.errors import UsageError
from limbo_plugin.records import EpisodeKey, EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.server.wire import TOKEN_ENV
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.openai_server import OpenAIServer

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

KEY = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                 fault_mode="timeout_post")


def _run(path: Path, server: OpenAIServer, reports: Path, **model_options: Any
         ) -> EpisodeRecord:
    options = AgentOptions(model_options={**server.model_options(), **model_options},
                           reports_dir=str(reports))
    return run_episode(KEY, RunConfig(agent=f"harness:command:{path}"), agent_options=options,
                       registry=REGISTRY)


def test_a_cli_that_finishes_is_graded_with_usage_and_a_transcript(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("finish"), model_server, tmp_path / "reports")
    assert record.error is None
    assert [e.tool for e in record.trace] == ["wait", "finish"]
    assert record.final_status == "completed"
    assert record.usage is not None
    assert (record.usage.prompt_tokens, record.usage.completion_tokens,
            record.usage.model_calls) == (300, 12, 2)
    harness = record.harness
    assert harness is not None and harness.name == "fake-finish"
    assert (harness.tool_listings, harness.tool_calls, harness.exit_code) == (1, 2, 0)
    assert not harness.timed_out and not harness.stopped_after_end
    assert harness.transcript is not None
    transcript = Path(harness.transcript)
    assert transcript.is_dir() and transcript.parent.name == KEY.id
    assert str(transcript).startswith(str(tmp_path / "reports" / "transcripts"))
    assert '"names"' in (transcript / "00-stdout").read_text()


def test_requests_are_counted_where_usage_events_cover_a_turn(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    """Codex reports usage once per turn, and a turn makes a request per tool round: counting
    the usage events said 1 model call where the gateway saw 7. ``requests`` counts the CLI's own
    line per request instead; cached prompt tokens are summed apart."""
    usage = {"source": "stdout", "where": {"type": "usage"}, "prompt_tokens": "prompt",
             "completion_tokens": "completion", "cached_tokens": "cached",
             "requests": {"source": "stderr", "contains": "model request sent"}}
    record = _run(fake_harness("per-turn", usage=usage), model_server, tmp_path / "reports")
    assert record.error is None and record.usage is not None
    assert (record.usage.prompt_tokens, record.usage.completion_tokens,
            record.usage.cached_prompt_tokens, record.usage.model_calls) == (300, 12, 100, 3)
    assert record.usage.unpriced_calls == 3


@pytest.mark.slow
def test_each_episode_gets_an_empty_workdir_a_throwaway_home_and_a_clean_environment(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_must_not_leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    seen = []
    for _ in range(2):
        record = _run(fake_harness("env"), model_server, tmp_path / "reports")
        assert record.error is None and record.final_status == "completed"
        assert record.harness is not None and record.harness.transcript is not None
        first_line = (Path(record.harness.transcript) / "00-stdout").read_text().splitlines()[0]
        seen.append(json.loads(first_line))
    homes = {s["env"]["HOME"] for s in seen}
    assert len(homes) == 2 and not any(Path(h).exists() for h in homes)  # fresh, then removed
    for shown in seen:
        assert shown["cwd_entries"] == []
        assert Path(shown["cwd"]).parent == Path(shown["env"]["HOME"]).parent
        assert "GITHUB_TOKEN" not in shown["env"] and "OPENAI_API_KEY" not in shown["env"]
        assert TOKEN_ENV not in shown["env"]  # only the MCP server gets the sandbox token
        assert not any(TOKEN_ENV in arg or "sk-" in arg for arg in shown["argv"])
        assert shown["argv"][-1].startswith(HARNESS_PREAMBLE + " Open an incident")
    transcripts = "".join(p.read_text() for p in (tmp_path / "reports").rglob("*-stdout"))
    assert "sk-from-the-environment" not in transcripts


def test_the_episode_token_is_scrubbed_from_every_kept_transcript_file(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    """A CLI may log its MCP configuration; the kept copy never holds the live token."""
    path = fake_harness("finish", transcript=[{"source": "stdout"}, {"source": "mcp.json"}])
    record = _run(path, model_server, tmp_path / "reports")
    assert record.error is None and record.harness is not None
    kept = Path(record.harness.transcript or "")
    config = json.loads(next(kept.glob("*mcp.json")).read_text())
    assert config["env"][TOKEN_ENV] == "[episode token]"


def test_a_cli_that_never_lists_the_tools_is_an_infrastructure_error(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    path = fake_harness("finish")
    spec = path.read_text().replace("fake_cli.py", "no_such_script.py")
    path.write_text(spec)
    record = _run(path, model_server, tmp_path)
    assert record.error is not None
    assert "its tools never loaded" in record.error and "no_such_script.py" in record.error
    assert record.harness is not None and record.harness.exit_code == 2  # python's, not ours


def test_the_wall_clock_limit_stops_the_cli_as_an_infrastructure_error(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("no-finish", command=["sleep", "60"]), model_server, tmp_path,
                  timeout_s=1)
    assert record.error is not None and "wall-clock limit of 1 s" in record.error
    assert record.harness is not None and record.harness.timed_out
    assert record.harness.wall_s < 10


def test_a_cli_lingering_after_finish_is_stopped_and_graded(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("linger"), model_server, tmp_path)
    assert record.error is None and record.final_status == "completed"
    assert record.harness is not None and record.harness.stopped_after_end
    assert record.harness.wall_s < 30


def test_a_cli_killed_mid_task_is_an_infrastructure_error_not_a_graded_failure(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("sigkill"), model_server, tmp_path)
    assert record.error is not None and "killed by signal 9" in record.error
    assert record.harness is not None and record.harness.tool_listings == 1


def test_a_cli_that_stops_without_finishing_is_graded_not_excused(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("no-finish"), model_server, tmp_path)
    assert record.error is None
    assert record.final_status is None and not record.ts


def test_a_cli_that_exits_with_an_error_before_finish_is_an_infrastructure_error(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    """It listed the tools, made a call, then its gateway failed and it exited 1: not the
    agent's failure, so no grade, and --limbo-resume re-runs it; its stderr is kept."""
    record = _run(fake_harness("exit-1"), model_server, tmp_path)
    assert record.error is not None and "exited with status 1" in record.error
    assert "connection refused" in record.error
    assert record.ts is None and record.eos is None
    assert record.harness is not None and record.harness.exit_code == 1
    kept = Path(record.harness.transcript or "")
    assert any("connection refused" in f.read_text() for f in kept.iterdir())


def test_an_adapter_can_say_a_non_zero_exit_is_the_agents_own(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("exit-1", nonzero_exit="graded"), model_server, tmp_path)
    assert record.error is None and record.final_status is None and not record.ts


@pytest.mark.parametrize("match", [{"contains": "model call failed"},
                                   {"where": {"type": "usage", "completion": 5}}],
                         ids=["text", "json-line"])
def test_a_cli_reporting_a_failed_gateway_is_an_infrastructure_error(
        match: dict[str, Any], fake_harness: Any, model_server: OpenAIServer,
        tmp_path: Path) -> None:
    record = _run(fake_harness("gateway-down", model_errors=[{"source": "stdout", **match}]),
                  model_server, tmp_path)
    assert record.error is not None
    assert f"the model gateway {model_server.base_url.rstrip('/')} failed" in record.error
    assert record.tool_calls == 1  # it had started: a gateway failure mid-task still counts


def test_a_cli_that_keeps_reconnecting_is_stopped_early_naming_the_gateway(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    """Its output is watched while it runs: after the adapter's count of error lines it is
    stopped, long before its wall-clock limit, and the record names the gateway."""
    path = fake_harness("reconnecting", model_errors=[
        {"source": "stdout", "where": {"type": "error"}, "times": 3}])
    record = _run(path, model_server, tmp_path, timeout_s=300)
    assert record.error is not None and "Reconnecting" in record.error
    assert f"the model gateway {model_server.base_url.rstrip('/')} failed" in record.error
    assert record.harness is not None and not record.harness.timed_out
    assert record.harness.wall_s < 150


def test_a_gateway_error_after_finish_does_not_void_the_episode(
        fake_harness: Any, model_server: OpenAIServer, tmp_path: Path) -> None:
    record = _run(fake_harness("finish", model_errors=[
        {"source": "stdout", "where": {"type": "tools"}}]), model_server, tmp_path)
    assert record.error is None and record.final_status == "completed"


def test_harness_agents_need_a_gateway_and_a_model(fake_harness: Any, tmp_path: Path) -> None:
    from limbo_plugin.agents import make_agent

    path = fake_harness("finish")
    with pytest.raises(UsageError, match="--model-option api_base=URL"):
        make_agent(f"harness:command:{path}", AgentOptions(model_options={}))
    path.write_text(path.read_text().replace("model: scripted\n", ""))
    with pytest.raises(UsageError, match="needs a model"):
        make_agent(f"harness:command:{path}",
                   AgentOptions(model_options={"api_base": "http://x/v1"}))
    agent = make_agent(f"harness:command:{path}",
                       AgentOptions(model_options={"api_base": "http://x/v1", "model": "m1"}))
    assert agent.name == f"harness:command:{path}"


def test_an_api_key_is_taken_from_the_named_environment_variable(
        fake_harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from limbo_plugin.agents.harness import LOCAL_API_KEY, HarnessAgent
    from limbo_plugin.agents.harness_spec import load_harness

    spec = load_harness(fake_harness("finish"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_GATEWAY_KEY", "sk-gateway")
    plain = HarnessAgent(spec, "m", AgentOptions(model_options={"api_base": "x"}))
    assert plain.api_key == LOCAL_API_KEY
    named = HarnessAgent(spec, "m", AgentOptions(model_options={
        "api_base": "x", "api_key_env": "MY_GATEWAY_KEY"}))
    assert named.api_key == "sk-gateway"
    assert os.environ.get("OPENAI_API_KEY") is None
