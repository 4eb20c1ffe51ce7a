"""The Responses API: the scripted model server speaks it (plain and as Server-Sent Events, with
Codex's namespaced tools), and the scaffold's ``wire=responses`` talks it through litellm with
reasoning items replayed — a faithful conduit like the chat wire."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest
from scaffoldkit import WORLDS, options_for, outcome

from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.episode import run_episode
from limbo_plugin.errors import UsageError
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import PolicyModel, SequenceModel, ToolNames, result_body
from limbo_plugin.testing.openai_server import OpenAIServer, Reply, ScriptedToolCall

REGISTRY = SpecRegistry.load(Path(__file__).resolve().parents[2] / "specs")

RESPONSES = {"model_options": {"wire": "responses"}}


def _raw(server: OpenAIServer, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("Content-Type") or "", data


def _events(data: bytes) -> list[dict[str, Any]]:
    events = []
    for block in data.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            event = json.loads(lines["data"])
            assert lines.get("event") == event["type"]
            events.append(event)
    return events


@pytest.mark.parametrize("policy", ["blind_retry", "verify_first"])
def test_the_responses_wire_is_a_faithful_conduit(policy: str, registry: SpecRegistry,
                                                  openai_server: OpenAIServer) -> None:
    openai_server.model = PolicyModel(policy, registry=registry, max_instance=1)
    for key in WORLDS[:3]:
        scripted = run_episode(key, RunConfig(agent=f"scripted:{policy}"), registry=registry)
        options = options_for(openai_server)
        options["model_options"]["wire"] = "responses"
        modelled = run_episode(key, RunConfig(agent="litellm:openai/scripted"),
                               registry=registry, agent_options=AgentOptions(**options))
        assert modelled.error is None
        assert outcome(modelled) == outcome(scripted), key.id
        assert modelled.usage is not None and modelled.usage.prompt_tokens > 0
    assert {r.protocol for r in openai_server.requests} == {"responses"}
    first = openai_server.requests[0].raw
    assert first is not None and first["instructions"].startswith("You are an autonomous")
    assert all(t["type"] == "function" and "name" in t for t in first["tools"])


def test_reasoning_items_are_replayed_to_the_model(openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([
        Reply(reasoning_content="check the ticket first",
              tool_calls=[ScriptedToolCall("wait", {"seconds": 2})]),
        Reply(tool_calls=[ScriptedToolCall("finish", {"status": "failed", "summary": "x",
                                                      "uncertain_operations": []})]),
    ])
    options = options_for(openai_server)
    options["model_options"]["wire"] = "responses"
    record = run_episode(WORLDS[0], RunConfig(agent="litellm:openai/scripted"),
                         agent_options=AgentOptions(**options), registry=REGISTRY)
    assert record.error is None and record.final_status == "failed"
    second = openai_server.requests[1].raw
    assert second is not None
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    reasoning = second["input"][1]
    assert reasoning["id"] == "rs_0"
    assert reasoning["summary"][0]["text"] == "check the ticket first"
    assert all(v is not None for item in second["input"] for v in item.values())


def test_a_streamed_response_is_server_sent_events_with_namespaced_calls(
        openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([Reply(
        content="calling", tool_calls=[ScriptedToolCall("mcp__acme__wait", {"seconds": 3})])])
    body = {"model": "m", "stream": True, "instructions": "be brief",
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "do it"}]}],
            "tools": [{"type": "namespace", "name": "mcp__acme",
                       "tools": [{"type": "function", "name": "wait", "parameters": {}}]}]}
    status, content_type, data = _raw(openai_server, "/v1/responses", body)
    assert status == 200 and content_type == "text/event-stream"
    events = _events(data)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created"
    assert events[-1]["type"] == "response.completed"
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == ["message", "function_call"]
    call = done[1]
    assert (call["name"], call["namespace"]) == ("wait", "mcp__acme")
    assert json.loads(call["arguments"]) == {"seconds": 3}
    assert events[-1]["response"]["output"] == done
    assert events[-1]["response"]["usage"]["total_tokens"] > 0
    request = openai_server.requests[0]
    assert request.protocol == "responses" and request.tool_names == ["mcp__acme__wait"]
    assert request.messages[0] == {"role": "system", "content": "be brief"}


def test_a_streamed_chat_completion_reassembles_in_the_openai_sdk(
        openai_server: OpenAIServer) -> None:
    from openai import OpenAI

    openai_server.model = SequenceModel([Reply(
        content="thinking", tool_calls=[ScriptedToolCall("wait", {"seconds": 4})])])
    client = OpenAI(base_url=openai_server.base_url, api_key="x", max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True})
    content, arguments, names, usage = "", "", [], None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                assert call.function is not None
                names.append(call.function.name)
                arguments += call.function.arguments or ""
    assert content == "thinking" and names == ["wait"]
    assert json.loads(arguments) == {"seconds": 4}
    assert usage is not None and usage.total_tokens > 0


def test_an_unknown_wire_names_the_valid_ones() -> None:
    from limbo_plugin.agents.scaffold import ScaffoldAgent

    with pytest.raises(UsageError, match="valid: chat, responses"):
        ScaffoldAgent("openai/x", AgentOptions(model_options={"wire": "grpc"}))


def test_tool_names_resolve_by_suffix_whatever_the_harness_calls_them() -> None:
    known = ["wait", "email_send", "email_search_sent", "tickets_get"]
    names = ToolNames(["acme-email_send", "mcp__acme__wait", "mcp_acme_tickets_get",
                       "search", "acme-email_search_sent"], known)
    assert names.canonical == set(known)
    assert names.offered("email_send") == "acme-email_send"
    assert names.canonical_of("mcp__acme__wait") == "wait"
    assert names.canonical_of("search") == "search"  # not a tool of the task


@pytest.mark.parametrize("shown", [
    '{"error":{"type":"timeout"}}',                                         # as sent
    'Wall time: 0.01 seconds\nOutput:{"error":{"type":"timeout"}}',          # Codex
    [{"type": "input_text", "text": '{"error":{"type":"timeout"}}'}],        # content parts
    'MCP server \'acme\': {"error":{"type":"timeout"}}',                     # Copilot
    '<untrusted_tool_result>\ndata\n{"error": "{\\"error\\":{\\"type\\":\\"timeout\\"}}"}\n'
    "</untrusted_tool_result>",                                              # Hermes
    '{"content":[{"type":"text","text":"{\\"error\\":{\\"type\\":\\"timeout\\"}}"}],'
    '"isError":true}',                                                       # a raw MCP result
])
def test_result_text_is_recovered_from_every_harness_wrapping(shown: Any) -> None:
    assert result_body(shown) == {"error": {"type": "timeout"}}
