"""The scaffold's conversation rendered for the OpenAI Responses API, and its answer read back.

The scaffold keeps one conversation in chat-completions form whatever the wire (paper §5: "the
same conversation is rendered to the chat-completions or the responses protocol depending on the
model"), so cassettes, the loop and the conditions stay protocol-blind. This module is the whole
difference:

- system message → ``instructions``; user messages → ``message`` items;
- an assistant message → its reasoning items first (replayed verbatim, as the Responses API wants
  them back), then its text as an ``output_text`` message, then one ``function_call`` item per
  tool call;
- a tool message → a ``function_call_output`` item;
- chat tools ``{"type": "function", "function": {…}}`` → flat ``{"type": "function", …}``.

Reading back, a response's output items become one assistant message whose ``reasoning_items``
field carries the reasoning items for the next request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def request_parts(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
                  ) -> dict[str, Any]:
    """``instructions``, ``input`` and ``tools`` of the Responses request for a conversation."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            instructions.append(_text(message.get("content")))
        elif role == "user":
            items.append({"role": "user", "content": _text(message.get("content"))})
        elif role == "assistant":
            items.extend(dict(item) for item in message.get("reasoning_items") or [])
            if message.get("content"):
                items.append({"type": "message", "role": "assistant",
                              "content": [{"type": "output_text",
                                           "text": _text(message["content"])}]})
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                items.append({"type": "function_call", "call_id": call.get("id"),
                              "name": function.get("name") or "",
                              "arguments": function.get("arguments") or ""})
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _text(message.get("content"))})
    parts: dict[str, Any] = {"input": items,
                             "tools": [_flat_tool(t) for t in tools] or None}
    if instructions:
        parts["instructions"] = "\n\n".join(instructions)
    return parts


def _flat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function") or {}
    return {"type": "function", "name": function.get("name"),
            "description": function.get("description") or "",
            "parameters": function.get("parameters") or {}}


def assistant_message(output: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The chat-form assistant message for a response's output items."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[dict[str, Any]] = []
    for index, item in enumerate(output):
        kind = item.get("type")
        if kind == "reasoning":
            reasoning.append(dict(item))
        elif kind == "message":
            texts.extend(str(part.get("text", "")) for part in item.get("content") or []
                         if isinstance(part, Mapping) and part.get("type") == "output_text")
        elif kind == "function_call":
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments if arguments is not None else {})
            calls.append({"id": item.get("call_id") or f"call_{index}", "type": "function",
                          "function": {"name": item.get("name") or "",
                                       "arguments": arguments}})
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_items"] = reasoning
    return message


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "" if content is None else str(content)
