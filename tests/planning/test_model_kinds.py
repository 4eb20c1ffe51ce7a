"""``limbo plan`` prices an agent by what its kind declares: a new model-backed kind (from an
extension) is priced at its model's price, not at $0 as a kind it does not know by name."""

from __future__ import annotations

import pytest

from limbo_plugin.agents import registry
from limbo_plugin.agents.base import Agent
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.registry import AgentKind, calls_model, harness_of, model_of
from limbo_plugin.planning.cost import budget


def _unused(rest: str, options: AgentOptions) -> Agent:
    raise AssertionError("not built when planning")


@pytest.fixture
def with_relay_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind an extension might add: ``relay:<model>``, calling the model it names."""
    kinds = {**registry.all_agent_kinds(),
             "relay": AgentKind("relay", "relay:<model>", lambda rest: None, _unused,
                                model=lambda rest: rest)}
    monkeypatch.setattr(registry, "all_agent_kinds", lambda: kinds)


@pytest.mark.usefixtures("with_relay_kind")
def test_a_new_model_backed_kind_is_priced_at_its_model() -> None:
    assert calls_model("relay:openai/gpt-4o") and model_of("relay:openai/gpt-4o") == \
        "openai/gpt-4o"
    planned = budget("relay:openai/gpt-4o", 10, None, 0.08)
    assert planned.note != "no model calls"
    assert planned.cost_usd is not None and planned.cost_usd > 0


def test_the_built_in_kinds_say_whether_and_which_model() -> None:
    assert not calls_model("scripted:blind_retry") and not calls_model("mcp:verify_first")
    assert calls_model("litellm:openai/gpt-4o") and calls_model("harness:codex:openai/o3")
    assert model_of("harness:codex:openai/o3") == "openai/o3"
    assert model_of("scripted:blind_retry") == "blind_retry", "a policy names itself"
    assert (harness_of("harness:codex:openai/o3"), harness_of("litellm:x")) == ("codex",
                                                                                  "minimal")
    assert budget("scripted:blind_retry", 5, None, 0.08).cost_usd == 0.0
