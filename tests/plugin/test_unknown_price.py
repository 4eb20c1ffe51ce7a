"""A model with no known price has an unknown cost, not a free one: the terminal summary and
``episodes.summary.json``/``.md`` say "unknown" instead of ``$0.0000``, and beside priced
calls the cost is shown as a lower bound."""

from __future__ import annotations

import json

import pytest

from limbo_plugin.report.aggregate import Summary
from limbo_plugin.report.summary import usage_line
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

SELECT = ["--experiment", "small", "-k", "incident_open and lost_ack"]


def _run(project: pytest.Pytester, server: OpenAIServer, model: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        *SELECT, "--agent", f"litellm:{model}", "--model-option", f"api_base={server.base_url}",
        "--model-option", "api_key=local", "--limbo-provider-backoff", "0")


@pytest.mark.early
def test_an_unpriced_model_shows_an_unknown_cost(project: pytest.Pytester,
                                                 registry: SpecRegistry) -> None:
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        result = _run(project, server, "openai/scripted")
    out = result.stdout.str()
    assert "cost unknown" in out and "$0.0000" not in out
    summary = json.loads((project.path / "reports" / "episodes.summary.json").read_text())
    assert summary["usage"]["cost_usd"] is None
    assert summary["usage"]["unpriced_model_calls"] > 0
    assert "cost unknown" in (project.path / "reports" / "episodes.summary.md").read_text()
    (line,) = (project.path / "reports" / "episodes.jsonl").read_text().splitlines()
    usage = json.loads(line)["usage"]
    assert usage["unpriced_calls"] == usage["model_calls"] > 0


@pytest.mark.early
def test_a_priced_model_shows_its_cost(project: pytest.Pytester, registry: SpecRegistry) -> None:
    with OpenAIServer(PolicyModel("verify_first", registry=registry)) as server:
        result = _run(project, server, "openai/gpt-4o-mini")
    out = result.stdout.str()
    assert "cost unknown" not in out and "(mean $" in out
    summary = json.loads((project.path / "reports" / "episodes.summary.json").read_text())
    assert summary["usage"]["cost_usd"] > 0 and summary["usage"]["unpriced_model_calls"] == 0


def test_priced_and_unpriced_calls_give_a_lower_bound() -> None:
    mixed = Summary(total=2, prompt_tokens=10, completion_tokens=2, cost_usd=0.5,
                    unpriced_calls=3)
    assert usage_line(mixed).endswith("at least $0.5000 (mean $0.2500 per episode); "
                                      "3 model call(s) of models with no known price are not "
                                      "counted.")
    assert usage_line(Summary(total=1)) == ""


def test_an_agent_that_reports_tokens_without_a_cost_has_an_unknown_cost(
        project: pytest.Pytester) -> None:
    """Your own agent (the README's ``session.usage.add(prompt, completion)``) knows its tokens,
    not their price: the summary says the cost is unknown, not $0.0000."""
    (project.path / "tokens_only.py").write_text(
        "from limbo_plugin.agents.scripted import ScriptedAgent\n"
        "class TokensOnly:\n"
        "    def run(self, session):\n"
        "        session.usage.add(120, 30)\n"
        "        ScriptedAgent('verify_first').run(session)\n")
    project.syspathinsert()
    result = project.runpytest(*SELECT, "--agent", "python:tokens_only:TokensOnly")
    out = result.stdout.str()
    assert "Model usage: 120 prompt + 30 completion tokens, cost unknown" in out, out[-2000:]
    assert "$0.0000" not in out
