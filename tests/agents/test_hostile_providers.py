"""Hung agents and providers: a provider that hangs, drops connections, answers garbage or tool
calls with invalid JSON arguments, and an agent that never returns, each end the episode as an
infrastructure error (or, for bad arguments, a tool error the agent sees) within the limits:
never a hang, never a crash, always a record that serialises."""

from __future__ import annotations

import time
from typing import Any

import pytest
from scaffoldkit import AGENT, WORLDS, run_model

from limbo_plugin.agents.base import InfrastructureError
from limbo_plugin.agents.options import AgentOptions
from limbo_plugin.agents.provider import DEFAULT_CALL_TIMEOUT_S, LiteLLMProvider, classify
from limbo_plugin.episode import run_episode
from limbo_plugin.records import EpisodeRecord
from limbo_plugin.runconfig import RunConfig
from limbo_plugin.spec.registry import SpecRegistry
from limbo_plugin.testing.openai_server import ChatRequest, OpenAIServer, Reply, ScriptedToolCall

KEY = WORLDS[0]


HANG_S = 600.0
"""How long a hung reply takes: longer than any test may run, so only a working limit ends it."""
HANG_GUARD_S = 300.0
"""Guards against a hang, not a speed check: minutes, so load on the machine cannot reach it."""


def quickly(registry: SpecRegistry, server: OpenAIServer, **model_options: Any
            ) -> tuple[EpisodeRecord, float]:
    """One scaffold episode with two attempts per model call and a 1 s call timeout; the
    record and the episode's wall time (for the hang guard only)."""
    start = time.monotonic()
    record = run_model(registry, KEY, server, provider_retries=2,
                       model_options=server.model_options(timeout=1, **model_options))
    elapsed = time.monotonic() - start
    EpisodeRecord.model_validate_json(record.model_dump_json())  # it serialises and reads back
    return record, elapsed


@pytest.mark.parametrize(("reply", "expected", "requests"), [
    (Reply(content="never mind", latency_s=HANG_S), "Timeout", 2),
    (Reply(broken="drop"), "giving up after 2 attempts", 2),
    (Reply(broken="not_json"), "infrastructure error", 2),
    (Reply(broken="no_choices"), "the provider returned no choices", 1),
    (Reply(status=503, error_message="overloaded"), "giving up after 2 attempts", 2),
])
def test_a_misbehaving_provider_is_an_infrastructure_error_not_a_hang(
        registry: SpecRegistry, openai_server: OpenAIServer, reply: Reply, expected: str,
        requests: int) -> None:
    openai_server.model = lambda request: reply
    record, elapsed = quickly(registry, openai_server)
    assert record.error is not None and record.error.startswith("infrastructure error:")
    assert expected in record.error, record.error
    # What ended the episode is seen in events: the provider got each attempt and the error
    # names the cause (for the hung reply, litellm's Timeout: only the 1 s call timeout can
    # produce it, the reply itself would come after ten minutes).
    # (A request the client gave up on may be logged by the server a moment later: at most.)
    assert 1 <= len(openai_server.requests) <= requests
    assert elapsed < HANG_GUARD_S, f"{elapsed:.1f} s: a hung provider must not hang the episode"


def test_tool_calls_with_invalid_json_arguments_are_tool_errors_the_agent_sees(
        registry: SpecRegistry, openai_server: OpenAIServer) -> None:
    def model(request: ChatRequest) -> Reply:
        if request.turn == 0:
            return Reply(tool_calls=[ScriptedToolCall("tickets_create", '{"title": "x",'),
                                     ScriptedToolCall("tickets_create", '[1, 2]'),
                                     ScriptedToolCall("no_such_tool", "{}")])
        return Reply(tool_calls=[ScriptedToolCall(
            "finish", {"status": "failed", "summary": "could not"})])

    openai_server.model = model
    record, _ = quickly(registry, openai_server)
    assert record.error is None
    first = [entry for entry in record.trace if entry.origin == "agent"][:3]
    assert all(entry.is_error for entry in first)
    assert "not valid JSON" in str(first[0].response)
    assert "must be a JSON object" in str(first[1].response)
    assert "unknown tool" in str(first[2].response)
    assert record.ledger == [], "a rejected call changes nothing"


def test_the_call_timeout_has_a_default_and_can_be_overridden() -> None:
    assert LiteLLMProvider("openai/x")._kwargs["timeout"] == DEFAULT_CALL_TIMEOUT_S == 300
    assert LiteLLMProvider("openai/x", {"timeout": 7})._kwargs["timeout"] == 7


class Stuck:
    """A Python agent that never returns: busy in a loop, or asleep."""

    name = "stuck"

    def __init__(self, how: str) -> None:
        self.how = how

    def run(self, session: Any) -> None:
        session.call("tickets_list", {"project": "OPS"})
        if self.how == "sleep":
            time.sleep(3600)
        while True:
            pass


@pytest.mark.parametrize("how", ["loop", "sleep"])
def test_the_episode_wall_clock_limit_ends_any_agent(registry: SpecRegistry, how: str) -> None:
    # The agent never returns by itself (an hour asleep, or forever busy): only the limit can
    # end the episode, and the record says it did.
    start = time.monotonic()
    record = run_episode(KEY, RunConfig(), registry=registry, agent=Stuck(how), time_limit_s=2)
    assert time.monotonic() - start < HANG_GUARD_S
    assert record.error == ("infrastructure error: the episode exceeded its wall-clock limit "
                            "of 2 s (--limbo-episode-timeout)")
    assert record.tool_calls == 1, "what happened before the limit is still recorded"


def test_the_wall_clock_limit_is_not_swallowed_by_a_catch_all(registry: SpecRegistry,
                                                              openai_server: OpenAIServer
                                                              ) -> None:
    """The limit fires inside litellm's HTTP call, whose except-Exception blocks must not turn
    it into a provider error to retry."""
    import litellm  # noqa: F401  # loaded before the clock starts: the limit is for the call

    openai_server.model = lambda request: Reply(content="late", latency_s=HANG_S)
    start = time.monotonic()
    record = run_episode(KEY, RunConfig(agent=AGENT), registry=registry, time_limit_s=5,
                         agent_options=AgentOptions(model_options=openai_server.model_options(),
                                                    provider_retries=8,
                                                    provider_backoff_s=0.01))
    assert time.monotonic() - start < HANG_GUARD_S
    assert record.error is not None and "wall-clock limit of 5 s" in record.error
    # The limit was not retried as a provider error (a retry would be a second request, then a
    # ten-minute wait).
    assert len(openai_server.requests) <= 1


@pytest.mark.parametrize(("model", "variables"), [
    ("openai/gpt-4o", ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY")),
    ("gemini/gemini-1.5-pro", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
])
def test_a_missing_api_key_is_said_at_once_not_retried_for_minutes(
        model: str, variables: tuple[str, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm reports the OpenAI SDK's missing-key error as an InternalServerError (status
    500), and its own for Gemini as an APIConnectionError; the retry loop took both for a
    provider outage: eight attempts with backoff, minutes per model call, before the episode
    said anything. Nothing here reaches the network: the key is missed before any request."""
    for variable in variables:
        monkeypatch.delenv(variable, raising=False)
    slept: list[float] = []
    provider = LiteLLMProvider(model, retries=8, sleep=slept.append)
    with pytest.raises(InfrastructureError) as failed:
        provider.complete([{"role": "user", "content": "hi"}], [])
    assert slept == [], "not retried"
    assert variables[0] in str(failed.value) and "giving up" not in str(failed.value)


def test_only_configuration_errors_skip_the_retries() -> None:
    """A connection error with a network cause, and a rate limit raised while another error was
    handled, are still retried; a connection error around litellm's own ValueError is not."""
    import litellm
    import openai

    def raised(make: Any, inner: BaseException) -> BaseException:
        """``make()`` raised while ``inner`` was handled, as litellm maps its errors."""
        try:
            try:
                raise inner
            except BaseException:
                raise make()  # noqa: B904 - the implicit context is the point
        except BaseException as error:
            return error

    def connection() -> BaseException:
        return litellm.APIConnectionError(message="no", llm_provider="x", model="m")

    def rate_limit() -> BaseException:
        return litellm.RateLimitError(message="slow down", llm_provider="x", model="m")

    assert classify(raised(connection, OSError("Name or service not known")))[0]
    assert classify(raised(rate_limit, ValueError("parsed a header")))[0]
    assert not classify(raised(connection, ValueError("Missing Gemini API key")))[0]
    assert not classify(raised(connection, openai.OpenAIError("Missing credentials")))[0]
