"""A tool-using agent built with LangGraph, run by Limbo once per episode.

The graph a team writes: a model node that calls a chat model bound to the tools, a
``ToolNode`` that runs the calls, and ``tools_condition`` looping between them until the model
answers without a call. The tools come from the episode's ``limbo mcp`` endpoint through
``langchain-mcp-adapters`` (one MCP session for the episode, as for any stateful server); the
model is ``ChatOpenAI`` at the gateway. The only Limbo-specific lines are the ``limbo_bridge``
calls: where the episode is, a usage line per model request, and a provider outage reported as
such.
"""

from __future__ import annotations

from typing import Any

import limbo_bridge
from langchain_core.messages import AIMessage, HumanMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.errors import GraphRecursionError
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

RECURSION_LIMIT = 120  # graph steps: two per tool round


def report(message: AIMessage) -> None:
    usage: dict[str, Any] = dict(message.usage_metadata or {})
    cached = (usage.get("input_token_details") or {}).get("cache_read", 0)
    limbo_bridge.report_usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0),
                              cached_tokens=cached or 0)


async def main(episode: limbo_bridge.Episode) -> None:
    client = MultiServerMCPClient({"acme": {"transport": "streamable_http",
                                            "url": episode.mcp_url,
                                            "headers": episode.mcp_headers(),
                                            "timeout": 30, "sse_read_timeout": 300}})
    async with client.session("acme") as session:
        tools = await load_mcp_tools(session)
        model = ChatOpenAI(model=episode.model, base_url=episode.api_base,
                           api_key=episode.api_key).bind_tools(tools)

        async def call_model(state: MessagesState) -> dict[str, list[AIMessage]]:
            message = await model.ainvoke(state["messages"])
            report(message)
            return {"messages": [message]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "model")
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
        app = graph.compile()
        try:
            state = await app.ainvoke({"messages": [HumanMessage(episode.prompt)]},
                                      {"recursion_limit": RECURSION_LIMIT})
        except GraphRecursionError:
            return  # the agent's own stop, graded as it stands
        print(state["messages"][-1].content, flush=True)


if __name__ == "__main__":
    limbo_bridge.run(main)
