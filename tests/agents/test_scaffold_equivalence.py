"""The scaffold is a faithful conduit: a model that behaves like a scripted policy gets the
scripted policy's grade.

:class:`PolicyModel` serves ``blind_retry`` / ``verify_first`` as a chat model that re-derives
its next call from the transcript. Run through the scaffold (real litellm, real HTTP), each
episode must reach the same ledger, duplicates, EOS, recovery behaviour and final report as the
scripted agent on the same world — anything lost or reordered between model and world shows up.
"""

from __future__ import annotations

import pytest
from scaffoldkit import WORLDS, outcome, run_model

from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer


@pytest.mark.parametrize("policy", ["blind_retry", "verify_first"])
def test_model_backed_policy_matches_scripted_policy(policy: str, registry: SpecRegistry,
                                                     openai_server: OpenAIServer) -> None:
    tasks = [registry.template(k.template).instantiate(k.instance) for k in WORLDS]
    openai_server.model = PolicyModel(policy, tasks=tasks, registry=registry)
    seen = set()
    for key in WORLDS:
        scripted = run_episode(key, RunConfig(agent=f"scripted:{policy}"), registry=registry)
        modelled = run_model(registry, key, openai_server)
        assert modelled.error is None
        assert (modelled.duplicates, modelled.eos, modelled.ts) == (
            scripted.duplicates, scripted.eos, scripted.ts), key.id
        assert outcome(modelled) == outcome(scripted), key.id
        assert modelled.usage is not None
        assert modelled.usage.model_calls == modelled.tool_calls  # one call per turn
        seen.add((modelled.duplicates, modelled.behaviour))
    # the worlds are chosen so that outcomes differ: equality above is not trivially true
    assert len(seen) >= 2


def test_policy_model_finds_task_from_the_registry(openai_server: OpenAIServer,
                                                   registry: SpecRegistry) -> None:
    key = EpisodeKey(template="invoice_batch", instance=1, focal_write="charge_1",
                     fault_mode="timeout_late")
    openai_server.model = PolicyModel("same_key", registry=registry, max_instance=2)
    modelled = run_model(registry, key, openai_server, instruction="no_cue")
    scripted = run_episode(key, RunConfig(agent="scripted:same_key", instruction="no_cue"),
                           registry=registry)
    assert outcome(modelled) == outcome(scripted)
    assert modelled.eos  # the key makes the late commit harmless
