"""``limbo plan``: episodes, model calls, tokens and cost of an experiment before it runs."""

from __future__ import annotations

import pytest

from limbo_plugin.agents.provider import import_litellm
from limbo_plugin.cli import main


def test_a_scripted_agent_costs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--agent", "scripted:verify_first"]) == 0
    out = capsys.readouterr().out
    assert "Experiment e1: 854 episode(s)." in out  # e1.yaml: 716 + 138 per model
    assert "scripted:verify_first: 854 episodes, ~0 model calls, ~0 tokens, $0.00" in out


def test_a_model_is_priced_from_litellms_map(capsys: pytest.CaptureFixture[str]) -> None:
    price = import_litellm().model_cost["gpt-4o"]
    expected = 854 * 12_000 * (0.9 * price["input_cost_per_token"]
                               + 0.1 * price["output_cost_per_token"])
    assert main(["plan", "--experiment", "e1", "--agent", "litellm:openai/gpt-4o",
                 "--completion-share", "0.1"]) == 0
    out = capsys.readouterr().out
    assert f"~{854 * 12_000:,} tokens, ${expected:,.2f}" in out


def test_an_unknown_model_has_an_unknown_cost(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--experiment", "e1", "--agent", "litellm:openai/no-such-model"]) == 0
    out = capsys.readouterr().out
    assert "unknown (no known price for openai/no-such-model)" in out
    assert "plus 1 agent(s) of unknown cost" in out
