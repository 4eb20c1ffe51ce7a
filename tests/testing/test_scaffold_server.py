"""The local OpenAI-compatible server itself: wire format, errors, latency, TCP_NODELAY."""

from __future__ import annotations

import http.client
import json
import socket
import time

from limbo_plugin.testing.models import FailingModel, SequenceModel
from limbo_plugin.testing.openai_server import OpenAIServer, Reply, ScriptedToolCall


def _post(server: OpenAIServer, path: str, body: dict) -> tuple[int, dict, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = json.loads(response.read())
    headers = {k.lower(): v for k, v in response.getheaders()}
    conn.close()
    return response.status, payload, headers


def test_chat_completion_wire_format(openai_server: OpenAIServer) -> None:
    openai_server.model = SequenceModel([Reply(
        content="ok", tool_calls=[ScriptedToolCall("wait", {"seconds": 2}),
                                  ScriptedToolCall("x", "{bad", id="custom")])])
    status, body, _ = _post(openai_server, "/v1/chat/completions",
                            {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 200 and body["object"] == "chat.completion" and body["model"] == "m"
    [choice] = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_0_0", "custom"]
    assert calls[0]["function"] == {"name": "wait", "arguments": '{"seconds": 2}'}
    assert calls[1]["function"]["arguments"] == "{bad"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    [request] = openai_server.requests
    assert request.first_user_text == "hi" and request.turn == 0


def test_errors_unknown_routes_and_latency(openai_server: OpenAIServer) -> None:
    openai_server.model = FailingModel(429, headers={"Retry-After": "3"})
    status, body, headers = _post(openai_server, "/v1/chat/completions", {"messages": []})
    assert status == 429 and headers["retry-after"] == "3"
    assert body["error"]["type"] == "rate_limit_error"
    assert _post(openai_server, "/v1/embeddings", {})[0] == 404
    openai_server.model = SequenceModel([Reply(content="slow", latency_s=0.15)])
    start = time.perf_counter()
    assert _post(openai_server, "/chat/completions", {"messages": []})[0] == 200
    assert time.perf_counter() - start >= 0.15


def test_accepted_sockets_have_tcp_nodelay(openai_server: OpenAIServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", openai_server.port, timeout=10)
    conn.request("POST", "/v1/chat/completions", json.dumps({"messages": []}))
    conn.getresponse().read()  # keep-alive: the server still holds the connection
    httpd = openai_server._httpd
    assert httpd is not None and httpd.connections
    for sock in httpd.connections:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    conn.close()
