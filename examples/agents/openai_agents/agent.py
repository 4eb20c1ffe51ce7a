"""A tool-using agent built with the OpenAI Agents SDK, run by Limbo once per episode.

It is written the way a team writes one for production: an ``Agent`` whose tools come from an
MCP server over streamable HTTP (here the episode's ``limbo mcp`` endpoint, with its bearer
token), a model behind an OpenAI-compatible gateway, ``Runner.run`` driving the loop. The only
Limbo-specific lines are the ``limbo_bridge`` calls: where the episode is, a usage line per
model request, and a provider outage reported as such.
"""

from __future__ import annotations

from typing import Any

import limbo_bridge
from agents import (
    Agent,
    MaxTurnsExceeded,
    RunContextWrapper,
    RunHooks,
    Runner,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from agents.items import ModelResponse
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

INSTRUCTIONS = "You complete the user's task with the tools you are given."
MAX_TURNS = 60


class UsageHooks(RunHooks[Any]):
    """One usage line per model request, as the SDK reports it."""

    async def on_llm_end(self, context: RunContextWrapper[Any], agent: Agent[Any],
                         response: ModelResponse) -> None:
        usage = response.usage
        cached = usage.input_tokens_details.cached_tokens if usage.input_tokens_details else 0
        limbo_bridge.report_usage(usage.input_tokens, usage.output_tokens, cached_tokens=cached)


async def main(episode: limbo_bridge.Episode) -> None:
    set_tracing_disabled(True)  # no trace export: the gateway is the only host it may reach
    set_default_openai_client(AsyncOpenAI(base_url=episode.api_base, api_key=episode.api_key),
                              use_for_tracing=False)
    set_default_openai_api("chat_completions")  # what OpenAI-compatible gateways serve
    server = MCPServerStreamableHttp(
        name="acme",
        params={"url": episode.mcp_url, "headers": episode.mcp_headers(), "timeout": 30},
        client_session_timeout_seconds=120,
    )
    async with server:
        agent = Agent(name="assistant", instructions=INSTRUCTIONS, model=episode.model,
                      mcp_servers=[server])
        try:
            result = await Runner.run(agent, episode.prompt, hooks=UsageHooks(),
                                      max_turns=MAX_TURNS)
        except MaxTurnsExceeded:
            return  # the agent's own stop, graded as it stands
        print(result.final_output, flush=True)


if __name__ == "__main__":
    limbo_bridge.run(main)
