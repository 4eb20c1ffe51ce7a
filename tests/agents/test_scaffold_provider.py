"""Provider errors, retries, usage and cost, through real litellm calls to the local server
(and litellm's own ``mock_response``)."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from scaffoldkit import FAULT_FREE, MODEL, options_for, run_model

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.provider import LiteLLMProvider, backoff_delay, retry_after_s
from limbo_plugin.episode import run_episode
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.models import (
    FailingModel,
    FlakyModel,
    SequenceModel,
    TextModel,
    finish_call,
)
from limbo_plugin.testing.openai_server import OpenAIServer, Reply, ScriptedToolCall

HELLO = [{"role": "user", "content": "hello"}]


def _provider(server: OpenAIServer, delays: list[float], **kw: Any) -> LiteLLMProvider:
    return LiteLLMProvider(MODEL, server.model_options(), sleep=delays.append,
                           **{"retries": 8, "backoff_s": 0.01, **kw})


def test_rate_limit_twice_then_success(registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    flaky = FlakyModel(SequenceModel([Reply(tool_calls=[finish_call()])]), failures=2,
                       status=429, retry_after="0")
    openai_server.model = flaky
    record = run_model(registry, FAULT_FREE, openai_server)
    assert record.error is None and record.final_status == "completed"
    assert flaky.seen == 3 and len(openai_server.requests) == 3
    assert record.usage is not None and record.usage.model_calls == 1  # failures are not turns


def test_retry_after_is_honoured_and_backoff_grows(openai_server: OpenAIServer) -> None:
    openai_server.model = FlakyModel(TextModel(), failures=3, status=429, retry_after="2")
    delays: list[float] = []
    turn = _provider(openai_server, delays).complete(HELLO, [])
    assert turn.message["content"] == TextModel().text
    assert len(delays) == 3 and all(d >= 2.0 for d in delays)

    openai_server.model = FlakyModel(TextModel(), failures=3, status=503, retry_after=None)
    delays.clear()
    _provider(openai_server, delays, backoff_s=1.0).complete(HELLO, [])
    assert all(lo <= d <= lo * 1.25 for lo, d in zip((1, 2, 4), delays, strict=True))


def test_backoff_is_capped_and_never_below_retry_after() -> None:
    assert backoff_delay(1, 1.0, 30.0) == 30.0
    assert backoff_delay(20, 1.0, None) == 120.0
    assert 0.01 <= backoff_delay(1, 0.01, None) <= 0.0125


def test_retry_after_parsing() -> None:
    class Err(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            self.litellm_response_headers = headers

    assert retry_after_s(Err({"retry-after": "7"})) == 7.0
    assert retry_after_s(Err({"Retry-After": "1.5"})) == 1.5
    assert retry_after_s(Err({"retry-after-ms": "250"})) == 0.25
    assert retry_after_s(Err({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after_s(Err({})) is None


def test_provider_down_is_recorded_as_an_infrastructure_error(
        registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    openai_server.model = FailingModel(500)
    record = run_model(registry, FAULT_FREE, openai_server, provider_retries=3)
    assert len(openai_server.requests) == 3
    assert record.error is not None
    assert "infrastructure error" in record.error and "after 3 attempts" in record.error
    assert "500" in record.error and "upstream model server exploded" in record.error
    assert not record.passed and record.tool_calls == 0


@pytest.mark.parametrize("status", [400, 401, 404])
def test_non_retryable_errors_fail_at_once(registry: SpecRegistry,
                                           openai_server: OpenAIServer, status: int) -> None:
    openai_server.model = FailingModel(status, message="no such thing")
    record = run_model(registry, FAULT_FREE, openai_server)
    assert len(openai_server.requests) == 1
    assert record.error is not None and str(status) in record.error


def test_connection_refused_is_retried_then_reported(openai_server: OpenAIServer) -> None:
    options = openai_server.model_options()
    openai_server.stop()
    delays: list[float] = []
    provider = LiteLLMProvider(MODEL, options, retries=3, backoff_s=0.01, sleep=delays.append)
    with pytest.raises(InfrastructureError, match="after 3 attempts"):
        provider.complete(HELLO, [])
    assert len(delays) == 2


def test_usage_sums_tokens_of_every_call(registry: SpecRegistry,
                                         openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([
        Reply(tool_calls=[ScriptedToolCall("wait", {"seconds": 1})], prompt_tokens=100,
              completion_tokens=7),
        Reply(tool_calls=[finish_call()], prompt_tokens=130, completion_tokens=11)])
    record = run_model(registry, FAULT_FREE, openai_server)
    assert record.usage is not None
    assert record.usage.model_dump() == {"prompt_tokens": 230, "completion_tokens": 18,
                                         "cached_prompt_tokens": 0,  # not reported here
                                         "cost_usd": 0.0, "model_calls": 2,
                                         "unpriced_calls": 2}  # unpriced model: unknown cost


def test_cost_uses_litellms_price_map_for_known_models(registry: SpecRegistry,
                                                       openai_server: OpenAIServer) -> None:
    import litellm

    openai_server.model = SequenceModel([Reply(tool_calls=[finish_call()], prompt_tokens=1000,
                                               completion_tokens=200)])
    record = run_model(registry, FAULT_FREE, openai_server, model="openai/gpt-4o-mini")
    prices = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * prices["input_cost_per_token"] + 200 * prices["output_cost_per_token"]
    assert record.usage is not None and record.usage.cost_usd == pytest.approx(expected)
    assert record.usage.cost_usd > 0


def test_litellm_mock_response_drives_the_scaffold(registry: SpecRegistry) -> None:
    finish = {"id": "call_1", "type": "function",
              "function": {"name": "finish",
                           "arguments": '{"status": "completed", "summary": "ok", '
                                        '"uncertain_operations": []}'}}
    options = {"model_options": {"mock_response": "Finishing.", "mock_tool_calls": [finish]}}
    record = run_episode(FAULT_FREE, RunConfig(agent="litellm:gpt-4o-mini"), registry=registry,
                         agent_options=AgentOptions(**options))
    assert record.error is None and record.final_status == "completed"
    assert record.usage is not None and record.usage.model_calls == 1
    assert record.usage.cost_usd > 0


def test_litellm_is_imported_offline() -> None:
    assert "litellm" in sys.modules  # imported by the tests above, through the scaffold
    assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") == "True"


def test_reasoning_content_is_sent_back(registry: SpecRegistry,
                                        openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([
        Reply(tool_calls=[ScriptedToolCall("wait", {"seconds": 1})],
              reasoning_content="I should wait first."),
        Reply(tool_calls=[finish_call()])])
    run_model(registry, FAULT_FREE, openai_server)
    assistant = openai_server.requests[1].messages[2]
    assert assistant["role"] == "assistant"
    assert assistant.get("reasoning_content") == "I should wait first."


def test_model_options_reach_the_request(registry: SpecRegistry,
                                         openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([Reply(tool_calls=[finish_call()])])
    options = options_for(openai_server)
    options["model_options"].update({"temperature": 0.25, "max_tokens": 321, "seed": 7})
    run_episode(FAULT_FREE, RunConfig(agent=f"litellm:{MODEL}"), registry=registry,
                         agent_options=AgentOptions(**options))
    body = openai_server.requests[0].body
    assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.25, 321, 7)
