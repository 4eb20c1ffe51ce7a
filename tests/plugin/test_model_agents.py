"""The plugin with a model-backed agent: options reach litellm, cassettes replay, provider
failures are errors excluded from the statistics and re-run on resume."""

from __future__ import annotations

import json

import pytest

from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import FailingModel, PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer, Reply

SELECT = ["--experiment", "small", "-k", "incident_open and (lost_ack or late_commit)"]


def model_args(server: OpenAIServer) -> list[str]:
    return ["--agent", "litellm:openai/scripted",
            "--model-option", f"api_base={server.base_url}",
            "--model-option", "api_key=local", "--limbo-provider-backoff", "0"]


def records(project: pytest.Pytester) -> list[dict]:
    """The records of the last run, without their run id (the one field two runs differ in)."""
    path = project.path / "reports" / "episodes.jsonl"
    return [{k: v for k, v in json.loads(line).items() if k != "run_id"}
            for line in path.read_text().splitlines() if line]


@pytest.mark.early
@pytest.mark.slow
def test_litellm_agent_through_the_plugin_and_cassette_replay(project: pytest.Pytester,
                                                              registry: SpecRegistry) -> None:
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        args = [*model_args(server), "--limbo-cassette", "cassette"]
        first = project.runpytest_subprocess(*SELECT, *args)
        assert server.requests, "the model was called through the local server"
        first.assert_outcomes(passed=1, failed=1)
        recorded = sorted(json.dumps(r, sort_keys=True) for r in records(project))
    # The server is gone: replay answers every model call from the cassette.
    replay = project.runpytest_subprocess(*SELECT, *args, "--limbo-cassette-mode", "replay")
    replay.assert_outcomes(passed=1, failed=1)
    assert sorted(json.dumps(r, sort_keys=True) for r in records(project)) == recorded
    assert all(r["agent"] == "litellm:openai/scripted" and r["usage"]["model_calls"] > 0
               for r in records(project))
    assert "duplicated ticket" in replay.stdout.str()


@pytest.mark.slow
def test_provider_failure_is_an_error_excluded_and_rerun(project: pytest.Pytester,
                                                         registry: SpecRegistry) -> None:
    with OpenAIServer(FailingModel()) as server:
        # Past the preflight (which would stop the run before its first episode: its own test,
        # tests/plugin/test_preflight.py), each episode meets the provider's error.
        failed = project.runpytest_subprocess(*SELECT, *model_args(server),
                                              "--limbo-provider-retries", "2",
                                              "--limbo-preflight=off")
        failed.assert_outcomes(errors=2)
        assert failed.ret == 10, "an infrastructure error has its own exit status"
        assert "infrastructure error" in failed.stdout.str()
        assert "2 episode(s) ended in an infrastructure error" in failed.stdout.str()
        assert all(r["error"] for r in records(project))
        server.model = PolicyModel("verify_first", registry=registry)
        resumed = project.runpytest_subprocess(*SELECT, *model_args(server), "--limbo-resume")
    resumed.assert_outcomes(passed=1, failed=1)
    latest = {r["episode_id"]: r for r in records(project)}
    assert all(r["error"] is None for r in latest.values())


@pytest.mark.slow
def test_a_hung_provider_through_pytest_under_xdist_ends_with_an_error(
        project: pytest.Pytester) -> None:
    # The provider never answers within the test (ten minutes); only the episode limit can end
    # the run, and the hang guard (runpytest's timeout) is minutes, not a speed check.
    with OpenAIServer(lambda request: Reply(content="zzz", latency_s=600)) as server:
        result = project.runpytest_subprocess(
            "--experiment", "small", "-k", "ticket-timeout_late or charge_1-timeout_late",
            "-n", "2", "--agent", "litellm:openai/scripted",
            "--model-option", f"api_base={server.base_url}", "--model-option", "api_key=k",
            "--limbo-episode-timeout", "2", "--limbo-preflight=off", timeout=300)
    result.assert_outcomes(errors=2)
    assert "exceeded its wall-clock limit of 2 s" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
