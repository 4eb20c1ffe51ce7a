"""The scaffold loop of the paper's §5: nudges, the idle end, the call budget, parallel calls,
malformed calls, and exactly which messages each prompt condition changes (A.2)."""

from __future__ import annotations

import json
from typing import Any

from scaffoldkit import FAULT_FREE, WORLDS, run_model

from limbo_plugin.agents.base import TOOL_CALL_BUDGET
from limbo_plugin.agents.prompts import CONTINUATION_NUDGE, SYSTEM_PROMPT
from limbo_plugin.conditions.prompts import AWARE_RULES, REFLECTION_MESSAGE
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import (
    MalformedModel,
    NeverFinishModel,
    PolicyModel,
    SequenceModel,
    TextModel,
    finish_call,
)
from limbo_plugin.testing.openai_server import OpenAIServer, Reply, ScriptedToolCall

CUE = "Make sure each action happens exactly once."


def test_prompt_texts_are_the_papers() -> None:
    assert SYSTEM_PROMPT.startswith("You are an autonomous operations agent at ACME Corp.")
    assert SYSTEM_PROMPT.endswith("operations whose outcome you are not certain about.")
    assert AWARE_RULES.startswith("Reliability rules:\n- A timeout, dropped connection")
    assert AWARE_RULES.count("\n- ") == 4
    assert REFLECTION_MESSAGE.startswith("One or more of your tool calls returned an error.")
    assert CONTINUATION_NUDGE == ("Continue the task using the tools. When you are done, "
                                  "call finish.")


def test_first_request_has_system_prompt_instruction_and_tools(
        openai_server: OpenAIServer, registry: SpecRegistry) -> None:
    openai_server.model = SequenceModel([Reply(tool_calls=[finish_call()])])
    record = run_model(registry, FAULT_FREE, openai_server)
    [request] = openai_server.requests
    task = registry.template(FAULT_FREE.template).instantiate(0)
    assert request.model == "scripted"
    assert request.messages == [{"role": "system", "content": SYSTEM_PROMPT},
                                {"role": "user", "content": task.instruction("default")}]
    names = request.tool_names
    assert {"wait", "escalate_to_human", "finish", "tickets_create", "email_send"} <= set(names)
    assert not any(n.startswith("billing_") for n in names)  # only the task's services
    assert record.final_status == "completed" and record.tool_calls == 1


def test_nudge_after_a_turn_without_tool_calls_and_end_after_three(
        registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    openai_server.model = TextModel("Let me think about this.")
    record = run_model(registry, FAULT_FREE, openai_server)
    requests = openai_server.requests
    assert len(requests) == 3  # the third idle turn ends the episode
    for n, request in enumerate(requests):
        tail = request.messages[2:]
        assert tail == [{"role": "assistant", "content": "Let me think about this."},
                        {"role": "user", "content": CONTINUATION_NUDGE}] * n
    assert record.error is None and record.final_status is None and record.tool_calls == 0
    assert record.usage is not None and record.usage.model_calls == 3


def test_idle_turns_count_over_the_whole_episode(registry: SpecRegistry,
                                                 openai_server: OpenAIServer) -> None:
    wait = Reply(tool_calls=[ScriptedToolCall("wait", {"seconds": 5})])
    text = Reply(content="Thinking.")
    openai_server.model = SequenceModel([text, wait, text, wait, text, wait])
    record = run_model(registry, FAULT_FREE, openai_server)
    assert len(openai_server.requests) == 5
    assert record.tool_calls == 2 and record.final_status is None


def test_call_budget_ends_the_episode(registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    openai_server.model = NeverFinishModel("wait", {"seconds": 1})
    record = run_model(registry, FAULT_FREE, openai_server)
    assert record.tool_calls == TOOL_CALL_BUDGET == 40
    assert len(openai_server.requests) == 40
    assert record.final_status is None and record.error is None


def test_budget_stops_inside_a_turn_of_parallel_calls(registry: SpecRegistry,
                                                      openai_server: OpenAIServer) -> None:
    calls = [ScriptedToolCall("wait", {"seconds": s}) for s in (1, 2, 3)]
    openai_server.model = SequenceModel([Reply(tool_calls=calls)])
    record = run_model(registry, FAULT_FREE, openai_server)
    assert record.tool_calls == 40  # 13 full turns and one call of the 14th
    assert len(openai_server.requests) == 14
    assert [e.arguments["seconds"] for e in record.trace[-2:]] == [3, 1]


def test_parallel_tool_calls_run_in_order_and_each_gets_its_answer(
        registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    calls = [ScriptedToolCall("wait", {"seconds": 7}),
             ScriptedToolCall("tickets_search", {"query": "checkout"}),
             ScriptedToolCall("wait", {"seconds": 3})]
    openai_server.model = SequenceModel([Reply(content="Three at once.", tool_calls=calls),
                                         Reply(tool_calls=[finish_call()])])
    record = run_model(registry, FAULT_FREE, openai_server)
    assert [(e.tool, e.arguments) for e in record.trace] == [
        ("wait", {"seconds": 7}), ("tickets_search", {"query": "checkout"}),
        ("wait", {"seconds": 3}), ("finish", finish_call().arguments)]
    assert [e.t_start for e in record.trace] == sorted(e.t_start for e in record.trace)
    second = openai_server.requests[1].messages
    assistant, *answers = second[2:]
    assert assistant["content"] == "Three at once."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_0_0", "call_0_1", "call_0_2"]
    assert [a["role"] for a in answers] == ["tool"] * 3
    assert [a["tool_call_id"] for a in answers] == ["call_0_0", "call_0_1", "call_0_2"]
    for answer, entry in zip(answers, record.trace, strict=False):
        assert json.loads(answer["content"]) == entry.response


def test_malformed_tool_calls_get_tool_errors_and_the_episode_goes_on(
        openai_server: OpenAIServer, registry: SpecRegistry) -> None:
    task = registry.template(FAULT_FREE.template).instantiate(0)
    openai_server.model = MalformedModel(PolicyModel("verify_first", tasks=[task],
                                                     registry=registry))
    record = run_model(registry, FAULT_FREE, openai_server)
    first = record.trace[:3]
    assert all(e.is_error for e in first)
    assert [e.response["error"]["type"] for e in first] == [
        "invalid_arguments", "unknown_tool", "invalid_arguments"]
    assert first[0].arguments == '{"seconds": 5'  # the raw text reached the transport
    assert record.error is None
    assert record.final_status == "completed" and record.eos
    tool_messages = [m for m in openai_server.requests[3].messages if m["role"] == "tool"]
    assert len(tool_messages) == 3 and all("error" in json.loads(m["content"])
                                           for m in tool_messages)


def _conversation(server: OpenAIServer) -> list[dict[str, Any]]:
    return server.requests[-1].messages


def test_conditions_change_exactly_their_messages(openai_server: OpenAIServer,
                                                  registry: SpecRegistry) -> None:
    key = WORLDS[0]  # a timeout: at least one tool error
    task = registry.template(key.template).instantiate(key.instance)
    openai_server.model = PolicyModel("blind_retry", tasks=[task], registry=registry)
    runs = {}
    for condition, instruction in (("vanilla", "default"), ("aware", "default"),
                                   ("reflect", "default"), ("vanilla", "no_cue")):
        openai_server.clear()
        record = run_model(registry, key, openai_server, condition=condition,
                           instruction=instruction)
        runs[condition, instruction] = (record, _conversation(openai_server))
    vanilla_record, vanilla = runs["vanilla", "default"]
    assert vanilla[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert vanilla[1]["content"].endswith(CUE)
    assert REFLECTION_MESSAGE not in json.dumps(vanilla)

    _, aware = runs["aware", "default"]
    assert aware[0]["content"] == SYSTEM_PROMPT + "\n\n" + AWARE_RULES
    assert aware[1:] == vanilla[1:]

    _, no_cue = runs["vanilla", "no_cue"]
    assert no_cue[1]["content"] == task.instruction("no_cue")
    assert vanilla[1]["content"] == no_cue[1]["content"] + " " + CUE
    assert no_cue[0] == vanilla[0] and no_cue[2:] == vanilla[2:]

    reflect_record, reflect = runs["reflect", "default"]
    reflections = [i for i, m in enumerate(reflect) if m.get("content") == REFLECTION_MESSAGE]
    assert reflections and all(reflect[i]["role"] == "user" for i in reflections)
    for i in reflections:  # right after the tool answers of a turn with an error
        assert reflect[i - 1]["role"] == "tool" and "error" in json.loads(reflect[i - 1]["content"])
    assert [m for i, m in enumerate(reflect) if i not in reflections] == vanilla
    error_turns = sum(1 for e in vanilla_record.trace if e.is_error)
    assert len(reflections) == error_turns
    assert outcome_of(reflect_record) == outcome_of(vanilla_record)


def outcome_of(record: Any) -> tuple[Any, ...]:
    return (record.duplicates, record.eos, record.behaviour, record.final_status)
