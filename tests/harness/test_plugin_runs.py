"""Harness agents through the pytest plugin, as a user runs them: items pass or fail on the
grade, an infrastructure error is an error (excluded, re-run on resume), records carry the
harness block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harnesskit import records

from limbo_plugin.agents.harness_install import find_harness, installed_executable
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

SELECT = ["--experiment", "small", "-k", "lost_ack"]


@pytest.mark.slow
def test_pytest_k_lost_ack_with_the_mcp_agent(project: pytest.Pytester) -> None:
    verify = project.runpytest_subprocess(*SELECT, "--agent", "mcp:verify_first")
    verify.assert_outcomes(passed=2)
    assert {r["agent"] for r in records(project)} == {"mcp:verify_first"}
    blind = project.runpytest_subprocess(*SELECT, "--agent", "mcp:blind_retry")
    blind.assert_outcomes(failed=2)
    assert "duplicated ticket" in blind.stdout.str()
    assert all(r["duplicates"] == 1 for r in records(project))


@pytest.mark.early
@pytest.mark.slow
def test_a_production_harness_through_the_plugin(project: pytest.Pytester) -> None:
    if installed_executable(find_harness("codex")) is None:
        pytest.skip("codex CLI is not installed: `limbo harness install codex`")
    args = [*SELECT, "-k", "incident_open and lost_ack", "--agent", "harness:codex:scripted"]
    for policy, outcome in (("blind_retry", {"failed": 1}), ("verify_first", {"passed": 1})):
        with OpenAIServer(PolicyModel(policy, registry=REGISTRY, max_instance=1)) as server:
            result = project.runpytest_subprocess(
                *args, "--model-option", f"api_base={server.base_url}")
        result.assert_outcomes(**outcome)
        (record,) = records(project)
        assert record["agent"] == "harness:codex:scripted"
        assert record["harness"]["version"] == "codex-cli 0.171.0"
        transcript = Path(record["harness"]["transcript"])
        assert transcript.is_dir() and project.path / "reports" in transcript.parents
        assert record["usage"]["prompt_tokens"] > 0


@pytest.mark.early
@pytest.mark.slow
def test_an_infrastructure_error_is_an_error_and_rerun_on_resume(
        project: pytest.Pytester, fake_harness: Any, model_server: OpenAIServer) -> None:
    path = fake_harness("finish")
    working = path.read_text()
    path.write_text(working.replace("fake_cli.py", "missing_cli.py"))
    args = [*SELECT, "--agent", f"harness:command:{path}",
            "--model-option", f"api_base={model_server.base_url}"]
    broken = project.runpytest_subprocess(*args)
    broken.assert_outcomes(errors=2)
    assert "its tools never loaded" in broken.stdout.str()
    assert all(r["error"] for r in records(project))
    path.write_text(working)
    resumed = project.runpytest_subprocess(*args, "--limbo-resume")
    resumed.assert_outcomes(failed=2)  # graded now: the CLI finished without doing the task
    latest = {r["episode_id"]: r for r in records(project)}
    assert all(r["error"] is None for r in latest.values())


def test_a_missing_gateway_is_a_one_line_error_per_episode(project: pytest.Pytester,
                                                           fake_harness: Any) -> None:
    # Now before the first episode (tests/harness/test_harness_ready.py), not once per episode.
    result = project.runpytest_subprocess(*SELECT, "--agent",
                                          f"harness:command:{fake_harness('finish')}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "pass --model-option api_base=URL" in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
