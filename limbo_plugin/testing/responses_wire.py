"""The OpenAI Responses API, translated to and from the chat shape scripted models read.

Codex CLI speaks nothing but the Responses API, so for a scripted policy to play the model behind
it, :class:`~limbo_plugin.testing.openai_server.OpenAIServer` must speak it too. Rather than
teach every scripted model a second protocol, a Responses request is rendered as the equivalent
chat-completions body (``instructions`` → a system message, ``function_call`` items → an
assistant message's ``tool_calls``, ``function_call_output`` → ``tool`` messages), the model
answers as usual, and its :class:`Reply` is rendered back as Responses output items.

Tool names: Codex sends MCP tools grouped in a ``namespace`` tool (``mcp__<server>``) and expects
a call to name the inner tool plus its namespace. In the chat view such a tool is flattened to
``<namespace>__<name>`` (the form Codex itself uses when it flattens), and a reply calling a
flattened name is split back into ``name`` and ``namespace``.

Streaming (``"stream": true``) answers with Server-Sent Events: ``response.created``, then
``response.output_item.added`` / ``response.output_item.done`` per item, then
``response.completed`` carrying the whole response and its usage. (Codex needs only the ``done``
events and ``response.completed``; the others are there for stricter clients.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from limbo_plugin.testing.model_io import Reply

RESPONSES_PATHS = ("/v1/responses", "/responses")
NAMESPACE_SEPARATOR = "__"


def chat_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat-completions body equivalent to a Responses request ``body``."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    pending: dict[str, Any] | None = None  # the assistant message collecting function calls
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "function_call":
            if pending is None:
                pending = {"role": "assistant", "content": None, "tool_calls": []}
                messages.append(pending)
            pending["tool_calls"].append({
                "id": str(item.get("call_id") or item.get("id") or ""),
                "type": "function",
                "function": {"name": flat_name(item), "arguments": item.get("arguments") or ""},
            })
            continue
        pending = None
        if kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id") or ""),
                             "content": text_of(item.get("output"))})
        elif kind == "message":
            role = str(item.get("role") or "user")
            messages.append({"role": "system" if role == "developer" else role,
                             "content": text_of(item.get("content"))})
    return {"model": body.get("model"), "messages": messages, "tools": chat_tools(body),
            "stream": bool(body.get("stream"))}


def flat_name(item: Mapping[str, Any]) -> str:
    name = str(item.get("name") or "")
    namespace = item.get("namespace")
    if namespace and not name.startswith(f"{namespace}{NAMESPACE_SEPARATOR}"):
        return f"{namespace}{NAMESPACE_SEPARATOR}{name}"
    return name


def chat_tools(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Function tools in chat format; namespaced ones flattened to ``<namespace>__<name>``."""
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, Mapping):
            continue
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if isinstance(inner, Mapping) and inner.get("name"):
                    tools.append(_function(inner, f"{tool.get('name')}{NAMESPACE_SEPARATOR}"))
        elif tool.get("type") == "function" and tool.get("name"):
            tools.append(_function(tool, ""))
    return tools


def _function(tool: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": f"{prefix}{tool.get('name')}", "description": tool.get("description") or "",
        "parameters": tool.get("parameters") or {}}}


def text_of(content: Any) -> str:
    """The text of a message's content or a call's output: a string, or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content
                       if isinstance(part, Mapping))
    return "" if content is None else json.dumps(content)


def namespaces(body: Mapping[str, Any]) -> set[str]:
    return {str(t.get("name")) for t in body.get("tools") or []
            if isinstance(t, Mapping) and t.get("type") == "namespace"}


def response_object(body: Mapping[str, Any], reply: Reply, turn: int, prompt_tokens: int,
                    completion_tokens: int) -> dict[str, Any]:
    """The ``response`` object for a successful reply (ids deterministic, from the turn)."""
    output: list[dict[str, Any]] = []
    if reply.reasoning_content is not None:
        output.append({"type": "reasoning", "id": f"rs_{turn}",
                       "summary": [{"type": "summary_text", "text": reply.reasoning_content}]})
    if reply.content is not None:
        output.append({"type": "message", "id": f"msg_{turn}", "role": "assistant",
                       "status": "completed",
                       "content": [{"type": "output_text", "text": reply.content,
                                    "annotations": []}]})
    spaces = namespaces(body)
    for index, call in enumerate(reply.tool_calls):
        arguments = (call.arguments if isinstance(call.arguments, str)
                     else json.dumps(dict(call.arguments), ensure_ascii=False))
        item: dict[str, Any] = {"type": "function_call", "id": f"fc_{turn}_{index}",
                                "call_id": call.id or f"call_{turn}_{index}",
                                "name": call.name, "arguments": arguments,
                                "status": "completed"}
        namespace, sep, inner = call.name.rpartition(NAMESPACE_SEPARATOR)
        if sep and namespace in spaces:
            item["name"], item["namespace"] = inner, namespace
        output.append(item)
    return {
        "id": f"resp_scripted_{turn}", "object": "response", "created_at": 1_700_000_000,
        "status": "completed", "model": body.get("model") or "scripted", "output": output,
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": prompt_tokens,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": completion_tokens,
                  "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def stream_events(response: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The SSE events of a streamed response, numbered."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": item})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": item})
    events.append({"type": "response.completed", "response": dict(response)})
    for number, event in enumerate(events):
        yield {**event, "sequence_number": number}


def sse(event: Mapping[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
