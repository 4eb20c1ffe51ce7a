"""E4's system-prompt paraphrases: same content as the A.2 prompt, other words, and they replace it.

A paraphrase that dropped an instruction (the finish statuses, the escalation rule) or added
reliability advice would measure content, not wording; one that copied the original's sentences
would measure nothing. Both are checked here, and a real scaffold episode shows the model is sent
the paraphrase in place of the original prompt and nothing else changes.
"""

from __future__ import annotations

import re

import pytest

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.prompts import SYSTEM_PROMPT
from limbo_plugin.conditions import find_condition
from limbo_plugin.conditions.wording import PARAPHRASES
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeKey
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel
from limbo_plugin.testing.openai_server import OpenAIServer

NAMES = [f"paraphrase_{i}" for i in (1, 2, 3)]

CONTENT = {
    "the role": r"autonomous operations agent",
    "the company": r"ACME Corp",
    "the task is done by calling the tools": r"\b(calling|using) (the|them)\b",
    "the systems are live production systems": r"live production systems",
    "no questions to the user": r"\bquestions?\b|\bask\b",
    "the user is unavailable": r"user (is|cannot)",
    "escalation reaches the on-call operator": r"escalate_to_human[^.;]*on-call operator"
                                               r"|on-call operator[^.;]*escalate_to_human",
    "escalation only when needed": r"escalate_to_human[^.;]*\bonly\b",
    "follow the instructions exactly": r"task instructions",
    "finish is called": r"\bfinish\b",
    "the three statuses": r"\"completed\", \"partial\" or \"failed\"",
    "a brief summary": r"summary",
    "the uncertain operations": r"operations whose outcome you are",
    "also when no further progress is possible": r"\bprogress\b|\bfurther\b",
}
"""Every statement of the A.2 prompt, as a pattern a faithful paraphrase must match."""

ADVICE = ("retry", "retries", "repeat", "verify", "check", "confirm", "idempotent", "idempotency",
          "key", "keys", "timeout", "timed out", "error", "errors", "duplicate", "exactly once",
          "wait", "read", "careful", "carefully", "consistent", "consistency")
"""Words of reliability guidance (the ``aware`` rules' territory): none may be added."""


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.;:])\s+", text) if len(s.strip()) > 20]


def test_three_paraphrases_each_its_own_condition() -> None:
    assert len(PARAPHRASES) == 3 and len(set(PARAPHRASES)) == 3
    for name, text in zip(NAMES, PARAPHRASES, strict=True):
        condition = find_condition(name)
        assert condition.wraps is None and not condition.reads_ground_truth
        assert condition.prompt.system_prompt(SYSTEM_PROMPT) == text, "replaces, not appends"
        assert condition.prompt.after_tool_error is None


@pytest.mark.parametrize("text", PARAPHRASES, ids=NAMES)
def test_a_paraphrase_keeps_every_statement_of_the_original(text: str) -> None:
    for statement, pattern in CONTENT.items():
        assert re.search(pattern, SYSTEM_PROMPT), f"the original itself says {statement}"
        assert re.search(pattern, text), f"missing: {statement}"


@pytest.mark.parametrize("text", PARAPHRASES, ids=NAMES)
def test_a_paraphrase_adds_no_reliability_advice(text: str) -> None:
    for word in ADVICE:
        pattern = rf"\b{word}\b"
        assert not re.search(pattern, SYSTEM_PROMPT, re.IGNORECASE)
        assert not re.search(pattern, text, re.IGNORECASE), f"adds {word!r}"


@pytest.mark.parametrize("text", PARAPHRASES, ids=NAMES)
def test_a_paraphrase_is_reworded_not_copied(text: str) -> None:
    for sentence in sentences(SYSTEM_PROMPT):
        assert sentence not in text
    for other in PARAPHRASES:
        if other != text:
            assert not set(sentences(text)) & set(sentences(other))


def test_the_scaffold_sends_the_paraphrase_instead_of_the_system_prompt(
        registry: SpecRegistry) -> None:
    """A real scaffold episode (litellm over HTTP to the local scripted model): the system
    message is the paraphrase, everything after it and the graded outcome are vanilla's."""
    key = EpisodeKey(template="incident_open", instance=0, focal_write="ticket",
                     fault_mode="timeout_post")
    task = registry.template(key.template).instantiate(key.instance)
    runs = {}
    with OpenAIServer(PolicyModel("verify_first", tasks=[task], registry=registry)) as server:
        for condition in ("vanilla", "paraphrase_2"):
            server.clear()
            config = RunConfig(agent="litellm:openai/scripted", condition=condition)
            options = AgentOptions(model_options=server.model_options())
            record = run_episode(key, config, registry=registry, agent_options=options)
            runs[condition] = (record, server.requests[-1].messages)
    (vanilla_record, vanilla), (record, messages) = runs["vanilla"], runs["paraphrase_2"]
    assert vanilla[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert messages[0] == {"role": "system", "content": PARAPHRASES[1]}
    assert messages[1:] == vanilla[1:]
    assert record.eos and record.ledger == vanilla_record.ledger
