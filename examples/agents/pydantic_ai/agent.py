"""A tool-using agent built with PydanticAI, run by Limbo once per episode.

Written the way PydanticAI's documentation writes one: an ``Agent`` with an ``MCPToolset`` for
the episode's ``limbo mcp`` endpoint (streamable HTTP, with its bearer token) and an
``OpenAIChatModel`` at the gateway, driven with ``agent.iter`` so each model response's usage is
seen as it arrives. The only Limbo-specific lines are the ``limbo_bridge`` calls: where the
episode is, a usage line per model request, and a provider outage reported as such.
"""

from __future__ import annotations

import limbo_bridge
from pydantic_ai import Agent
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.usage import UsageLimits

INSTRUCTIONS = "You complete the user's task with the tools you are given."
REQUEST_LIMIT = 60


async def main(episode: limbo_bridge.Episode) -> None:
    model = OpenAIChatModel(episode.model, provider=OpenAIProvider(base_url=episode.api_base,
                                                                   api_key=episode.api_key))
    toolset = MCPToolset(episode.mcp_url, headers=episode.mcp_headers())
    agent = Agent(model, instructions=INSTRUCTIONS, toolsets=[toolset])
    try:
        async with agent.iter(episode.prompt,
                              usage_limits=UsageLimits(request_limit=REQUEST_LIMIT)) as run:
            async for node in run:
                if Agent.is_call_tools_node(node):
                    usage = node.model_response.usage
                    limbo_bridge.report_usage(usage.input_tokens, usage.output_tokens,
                                              cached_tokens=usage.cache_read_tokens)
    except UsageLimitExceeded:
        return  # the agent's own stop, graded as it stands
    if run.result is not None:
        print(run.result.output, flush=True)


if __name__ == "__main__":
    limbo_bridge.run(main)
