"""The chat-completions wire format the scripted server answers in: the ``chat.completion``
object for a :class:`~limbo_plugin.testing.model_io.Reply`, the chunks of its streamed form, the
usage block and the error type of an HTTP status (the Responses protocol's counterpart is
:mod:`limbo_plugin.testing.responses_wire`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from limbo_plugin.testing.model_io import ChatRequest, Reply

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


def completion_body(request: ChatRequest, reply: Reply) -> dict[str, Any]:
    """The ``chat.completion`` object for a successful reply.

    Tool-call ids default to ``call_<turn>_<index>``: deterministic, so a re-run of the same
    episode sends byte-identical requests (which the cassette tests rely on).
    """
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    calls = _chat_calls(request, reply)
    if calls:
        message["tool_calls"] = calls
    if reply.reasoning_content is not None:
        message["reasoning_content"] = reply.reasoning_content
    prompt, completion = token_counts(request, reply)
    return {
        "id": f"chatcmpl-scripted-{request.turn}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": request.model or "scripted",
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def _chat_calls(request: ChatRequest, reply: Reply) -> list[dict[str, Any]]:
    calls = []
    for index, call in enumerate(reply.tool_calls):
        arguments = (call.arguments if isinstance(call.arguments, str)
                     else json.dumps(dict(call.arguments), ensure_ascii=False))
        calls.append({"id": call.id or f"call_{request.turn}_{index}", "type": "function",
                      "function": {"name": call.name, "arguments": arguments}})
    return calls


def token_counts(request: ChatRequest, reply: Reply) -> tuple[int, int]:
    """``(prompt, completion)`` tokens: the reply's own counts, else a deterministic estimate."""
    prompt = (reply.prompt_tokens if reply.prompt_tokens is not None
              else estimate_tokens(request.body.get("messages"), request.body.get("tools")))
    completion = (reply.completion_tokens if reply.completion_tokens is not None
                  else estimate_tokens(reply.content, _chat_calls(request, reply)) + 1)
    return prompt, completion


def completion_chunks(completion: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A ``chat.completion`` as the chunks a streaming provider sends: the role, the content,
    each tool call whole, the finish reason, then a usage-only chunk."""
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if message.get("reasoning_content"):
        yield chunk({"reasoning_content": message["reasoning_content"]})
    if message.get("content"):
        yield chunk({"content": message["content"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice["finish_reason"])
    yield {**base, "choices": [], "usage": completion["usage"]}


def estimate_tokens(*parts: Any) -> int:
    """A deterministic token estimate (four characters a token) for the usage block."""
    size = sum(len(json.dumps(p, ensure_ascii=False)) for p in parts if p is not None)
    return max(1, size // 4)


def error_type(status: int) -> str:
    return {400: "invalid_request_error", 401: "authentication_error",
            404: "not_found_error", 429: "rate_limit_error"}.get(status, "server_error")
