"""A model-backed run whose key is refused or whose gateway is not there: found by one real
request before the first episode (its own exit status, one line naming the model, the address
and the provider's answer), or, with the preflight off, by the run stopping after a few
infrastructure errors in a row; the errors are grouped by cause whatever ``--tb`` says, and
``limbo show`` prints an episode's error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from limbo_plugin.agents.preflight import preflight
from limbo_plugin.agents.registry import AgentPlan
from limbo_plugin.cli import main
from limbo_plugin.plugin.controller import INFRASTRUCTURE_ERROR
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import FailingModel, PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

ALL_EIGHT = ["--experiment", "small"]
REFUSED = "Incorrect API key provided: sk-wrong"


@pytest.fixture
def refusing() -> Iterator[OpenAIServer]:
    """A gateway that answers every request 401, as a provider does a wrong key."""
    with OpenAIServer(FailingModel(401, REFUSED)) as server:
        yield server


@pytest.fixture
def absent() -> str:
    """The address of a gateway that is not there: a port nothing listens on any more."""
    server = OpenAIServer(FailingModel()).start()
    server.stop()
    return server.base_url


def litellm_args(base_url: str) -> list[str]:
    return ["--agent", "litellm:openai/scripted", "--model-option", f"api_base={base_url}",
            "--model-option", "api_key=sk-wrong", "--limbo-provider-backoff", "0",
            "--limbo-provider-retries", "2"]


def recorded(project: pytest.Pytester) -> list[dict]:
    path = project.path / "reports" / "episodes.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_preflight_names_the_agent_the_address_and_the_answer(refusing: OpenAIServer,
                                                              absent: str) -> None:
    plan = AgentPlan.of("litellm:openai/scripted", model_options={
        "api_base": refusing.base_url, "api_key": "sk-wrong", "temperature": 0})
    line = preflight({plan})
    assert line is not None and "\n" not in line
    assert f"litellm:openai/scripted at {refusing.base_url}: AuthenticationError (HTTP 401)" \
        in line and REFUSED.split(":")[0] in line
    assert "--limbo-preflight=off" in line
    assert len(refusing.requests) == 1, "one request per endpoint"
    request = refusing.requests[0].body
    assert request["max_tokens"] == 1 and request["temperature"] == 0, \
        "a one-token request with the run's own options"
    gone = preflight({AgentPlan.of("litellm:openai/scripted",
                                   model_options={"api_base": absent, "api_key": "k"})})
    assert gone is not None and f"at {absent}: " in gone and "Connection" in gone


def test_preflight_passes_a_gateway_that_answers_and_asks_each_endpoint_once(
        registry: SpecRegistry) -> None:
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        options = {"api_base": server.base_url, "api_key": "k"}
        plans = {AgentPlan.of("litellm:openai/scripted", condition, options)
                 for condition in ("vanilla", "aware")}
        plans.add(AgentPlan("scripted:verify_first"))  # no endpoint: nothing is asked
        assert preflight(plans) is None
        assert len(server.requests) == 1


@pytest.mark.slow
@pytest.mark.parametrize("gateway", ["refusing", "absent"])
def test_a_run_stops_before_its_first_episode_with_its_own_exit_status(
        project: pytest.Pytester, gateway: str, request: pytest.FixtureRequest) -> None:
    base = request.getfixturevalue(gateway)
    base_url = base.base_url if isinstance(base, OpenAIServer) else base
    result = project.runpytest_subprocess(*ALL_EIGHT, *litellm_args(base_url), "--tb=no",
                                          "-rN")
    assert result.ret == INFRASTRUCTURE_ERROR
    out = result.stdout.str() + result.stderr.str()
    lines = [line for line in out.splitlines() if "preflight failed" in line]
    assert len(lines) == 1, out[-3000:]
    assert f"litellm:openai/scripted at {base_url}: " in lines[0]
    assert ("AuthenticationError (HTTP 401)" if gateway == "refusing" else "Connection") \
        in lines[0]
    assert recorded(project) == [], "no episode started"
    assert "Traceback" not in out


@pytest.mark.slow
def test_without_preflight_the_run_stops_after_consecutive_errors(
        project: pytest.Pytester, refusing: OpenAIServer) -> None:
    result = project.runpytest_subprocess(*ALL_EIGHT, *litellm_args(refusing.base_url),
                                          "--limbo-preflight=off", "--limbo-max-errors", "3",
                                          "--tb=no", "-rN")
    assert result.ret == INFRASTRUCTURE_ERROR
    records = recorded(project)
    assert len(records) == 3 and all(r["error"] for r in records), "3 of 8, then the stop"
    out = result.stdout.str()
    assert "limbo: plan: litellm:openai/scripted: 8 episode(s), ~78 model calls, ~96,000 " \
        "tokens, cost unknown (no known price for openai/scripted)" in out
    assert "stopped after 3 consecutive infrastructure errors (--limbo-max-errors 3)" in out
    # --tb=no hides every episode's error; the grouped causes still say what went wrong
    assert "Infrastructure errors: 3 episode(s), by cause" in out
    cause = [line for line in out.splitlines() if line.startswith("  3 × ")]
    assert len(cause) == 1 and "AuthenticationError (HTTP 401)" in cause[0]
    # limbo show prints the error the record holds
    episode = records[0]["test_id"]
    reports = project.path / "reports" / "episodes.jsonl"
    assert main(["show", episode, "--records", str(reports)]) == 0


@pytest.mark.slow
def test_under_xdist_each_worker_stops_after_consecutive_errors(
        project: pytest.Pytester, refusing: OpenAIServer) -> None:
    """Each worker holds a queue of episodes the controller's stop would let it finish: the
    workers stop themselves, so no more than the limit per worker run."""
    result = project.runpytest_subprocess(
        "--experiment", "default", "-k", "late_commit", "-n", "2",
        *litellm_args(refusing.base_url), "--limbo-preflight=off", "--limbo-max-errors", "2",
        "--tb=no", "-rN")
    assert result.ret == INFRASTRUCTURE_ERROR
    records = recorded(project)
    assert 2 <= len(records) <= 4 and all(r["error"] for r in records), len(records)
    assert "stopped after 2 consecutive infrastructure errors" in result.stdout.str()


def test_limbo_show_prints_an_episodes_error(tmp_path: pytest.TempPathFactory,
                                             registry: SpecRegistry,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from limbo_plugin.episode import run_episode
    from limbo_plugin.experiments import iter_worlds
    from limbo_plugin.runconfig import RunConfig

    key = next(iter(iter_worlds(registry, ["incident_open"], [0], "all", ["timeout_post"])))
    record = run_episode(key, RunConfig(), registry=registry)
    record = record.model_copy(
        update={"error": "litellm:openai/x: AuthenticationError (HTTP 401): invalid key"})
    path = Path(str(tmp_path)) / "episodes.jsonl"
    path.write_text(record.model_dump_json() + "\n")
    assert main(["show", record.test_id, "--records", str(path)]) == 0
    out = capsys.readouterr().out
    assert "[ERROR]" in out and "[FAIL]" not in out
    assert "infrastructure error" in out and "AuthenticationError (HTTP 401): invalid key" in out


def test_the_plan_line_prices_the_run_and_names_its_budget() -> None:
    from limbo_plugin.plugin.terminal import plan_lines

    assert plan_lines({"scripted:verify_first": 100}, None) == [], "nothing to spend"
    (line, budget) = plan_lines({"litellm:openai/gpt-4o-mini": 100,
                                 "scripted:verify_first": 5}, 0.01)
    assert line.startswith("limbo: plan: litellm:openai/gpt-4o-mini: 100 episode(s), ~970 "
                           "model calls, ~1,200,000 tokens, ~$")
    assert budget == ("limbo: budget: --limbo-cost-limit $0.01 stops starting episodes once the "
                      "recorded cost reaches it — the estimate is above it: the run will stop "
                      "short")
    assert plan_lines({"litellm:openai/gpt-4o-mini": 1}, None)[-1].startswith(
        "limbo: budget: none (--limbo-cost-limit USD sets one")


def test_a_harness_is_preflighted_at_its_gateway_with_its_key_and_wire(
        refusing: OpenAIServer) -> None:
    plan = AgentPlan.of("harness:codex:gpt-5-mini",
                        model_options={"api_base": refusing.base_url, "api_key": "sk-wrong"})
    line = preflight({plan})
    assert line is not None
    assert f"harness:codex:gpt-5-mini at {refusing.base_url}: AuthenticationError (HTTP 401)" \
        in line
    (request,) = refusing.requests
    assert request.protocol == "responses", "Codex speaks the Responses API to its gateway"
    assert request.model == "gpt-5-mini"
