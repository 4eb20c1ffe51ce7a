"""A harness agent the run cannot use as asked stops the run before its first episode, with one
line: no gateway (``--model-option api_base``), or a condition that changes what the model is
told (a harness keeps its own system prompt and conversation, so ``aware`` or a paraphrase
would silently measure ``vanilla``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from limbo_plugin.agents.registry import AgentPlan, check_ready
from limbo_plugin.cli import main
from limbo_plugin.errors import UsageError
from limbo_plugin.testing.openai_server import OpenAIServer

SELECT = ["--experiment", "small", "-k", "lost_ack"]


def _stopped_before_any_episode(project: pytest.Pytester, result: pytest.RunResult,
                                message: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert message in err
    assert "Traceback" not in err and "INTERNALERROR" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err
    assert not (project.path / "reports" / "episodes.jsonl").exists()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_harness_without_a_gateway_stops_the_run(project: pytest.Pytester, fake_harness: Any,
                                                   workers: list[str]) -> None:
    agent = f"harness:command:{fake_harness('finish')}"
    result = project.runpytest_subprocess(*SELECT, *workers, "--agent", agent)
    _stopped_before_any_episode(project, result, "pass --model-option api_base=URL")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_harness_under_a_prompt_condition_stops_the_run(
        project: pytest.Pytester, fake_harness: Any, model_server: OpenAIServer,
        workers: list[str]) -> None:
    agent = f"harness:command:{fake_harness('finish')}"
    result = project.runpytest_subprocess(
        *SELECT, *workers, "--agent", agent, "--condition", "paraphrase_2",
        "--model-option", f"api_base={model_server.base_url}")
    _stopped_before_any_episode(project, result, "cannot run under condition 'paraphrase_2'")
    assert "valid for harness agents: vanilla, guard" in result.stderr.str()


def test_an_experiment_arm_with_paraphrases_stops_a_harness_run(
        project: pytest.Pytester, fake_harness: Any, model_server: OpenAIServer) -> None:
    agent = f"harness:command:{fake_harness('finish')}"
    (project.path / "specs" / "experiments" / "words.yaml").write_text(
        "name: words\ntemplates: [incident_open]\ninstances: [0]\nfocal_writes: [ticket]\n"
        f"modes: [timeout_post]\nagents: ['{agent}']\n"
        f"model_options: {{api_base: '{model_server.base_url}'}}\n"
        "conditions: [vanilla]\narms:\n  - name: wording\n    conditions: [paraphrase_1]\n")
    result = project.runpytest_subprocess("--experiment", "words")
    _stopped_before_any_episode(project, result, "cannot run under condition 'paraphrase_1'")


def test_check_ready_judges_conditions_and_options_per_agent_kind(fake_harness: Any) -> None:
    harness = f"harness:command:{fake_harness('finish')}"
    gateway = {"api_base": "http://127.0.0.1:1/v1"}
    check_ready([AgentPlan.of(harness, "guard", gateway), AgentPlan.of(harness, "wait_30",
                                                                       gateway)])
    check_ready([AgentPlan.of("scripted:blind_retry", "paraphrase_1")])  # ignores prompts by design
    for condition in ("aware", "reflect", "paraphrase_3"):
        with pytest.raises(UsageError, match=f"cannot run under condition '{condition}'"):
            check_ready([AgentPlan.of(harness, condition, gateway)])
    with pytest.raises(UsageError, match="api_base=URL"):
        check_ready([AgentPlan.of(harness, "vanilla", {"temperature": "0"})])


def test_limbo_run_refuses_a_harness_under_a_prompt_condition(
        fake_harness: Any, capfd: pytest.CaptureFixture[str]) -> None:
    specs = str(Path(__file__).resolve().parents[2] / "specs")
    status = main(["--specs", specs, "run", "incident_open", "0", "ticket", "timeout_post",
                   "--agent", f"harness:command:{fake_harness('finish')}", "--condition", "aware",
                   "--model-option", "api_base=http://127.0.0.1:1/v1"])
    err = capfd.readouterr().err
    assert status == 2
    assert "cannot run under condition 'aware'" in err and len(err.strip().splitlines()) == 1
