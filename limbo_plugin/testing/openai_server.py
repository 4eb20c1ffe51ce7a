"""A local OpenAI-compatible model server whose "model" is a Python callable.

It exists so that model-backed agents — the litellm scaffold and the production harness CLIs —
can be exercised end to end (real litellm, real HTTP, real CLIs, real provider-error mapping)
without a network, an API key or a model. A *scripted model* is any callable from the parsed
request (:class:`ChatRequest`) to a :class:`Reply`: tool calls, text, or an HTTP error such as 429
with ``Retry-After`` or 500, each with optional latency. Ready-made scripted models live in
:mod:`limbo_plugin.testing.models`.

It speaks the two protocols agents use:

- ``POST /v1/chat/completions``, plain or streamed (``"stream": true``: ``chat.completion.chunk``
  events, a final usage chunk, ``[DONE]``), as litellm, Copilot CLI and Hermes send it;
- ``POST /v1/responses``, plain or streamed as Server-Sent Events, as Codex CLI sends it (see
  :mod:`limbo_plugin.testing.responses_wire`). A Responses request reaches the scripted model as
  the equivalent chat request, so every scripted model serves both protocols.

Design notes:

- ``ThreadingHTTPServer`` speaking HTTP/1.1 keep-alive with ``TCP_NODELAY`` on every socket
  (:mod:`limbo_plugin.server.loopback`): concurrent episodes are served in parallel, pooled
  connections are reused, and no call waits ~40 ms on Nagle's algorithm.
- Every request is recorded (:attr:`OpenAIServer.requests`) so tests can assert exactly which
  messages a condition changed; :attr:`ChatRequest.raw` keeps a Responses request as it came.

Run it for manual experiments with a scripted policy as the model::

    python -m limbo_plugin.testing.openai_server --policy verify_first --port 8000
    pytest -k late_commit --agent litellm:openai/scripted \\
        --model-option api_base=http://127.0.0.1:8000/v1 --model-option api_key=local
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from limbo_plugin.processes import stop
from limbo_plugin.server.loopback import LoopbackHTTPServer
from limbo_plugin.testing import responses_wire
from limbo_plugin.testing.chat_wire import (
    CHAT_PATHS,
    completion_body,
    completion_chunks,
    error_type,
    token_counts,
)
from limbo_plugin.testing.model_io import ChatRequest, Reply, ScriptedModel, ScriptedToolCall

DUMMY_API_KEY = "sk-limbo-local"

__all__ = ["DUMMY_API_KEY", "ChatRequest", "OpenAIServer", "Reply", "ScriptedModel",
           "ScriptedToolCall", "main", "server_process"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> OpenAIServer:
        owner: OpenAIServer = self.server.owner  # type: ignore[attr-defined]
        return owner

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in CHAT_PATHS and path not in responses_wire.RESPONSES_PATHS:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            self._send(400, {"error": {"message": f"invalid JSON body: {exc}",
                                       "type": "invalid_request_error"}})
            return
        if path in CHAT_PATHS:
            request = ChatRequest(body=body, received_at=time.monotonic())
        else:
            request = ChatRequest(body=responses_wire.chat_body(body),
                                  received_at=time.monotonic(), protocol="responses", raw=body)
        owner = self.owner
        owner._record(request)
        try:
            reply = owner.model(request)
        except Exception as exc:  # a broken scripted model must show up as a 500, not a hang
            reply = Reply(status=500, error_message=f"scripted model raised {exc!r}")
        delay = owner.latency_s + reply.latency_s
        if delay > 0:
            time.sleep(delay)
        if reply.broken == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.broken == "not_json":
            data = b"<html>502 Bad Gateway</html>"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if reply.broken == "no_choices":
            self._send(200, {"id": "chatcmpl-broken", "object": "chat.completion",
                             "created": 0, "model": request.model, "choices": []})
            return
        if reply.status != 200:
            error = {"message": reply.error_message or f"scripted error {reply.status}",
                     "type": error_type(reply.status), "code": reply.status}
            self._send(reply.status, {"error": error}, reply.headers)
            return
        streamed = bool(body.get("stream"))
        if request.protocol == "responses":
            prompt, completion = token_counts(request, reply)
            response = responses_wire.response_object(body, reply, request.turn, prompt,
                                                       completion)
            if streamed:
                self._stream(responses_wire.sse(e) for e in
                             responses_wire.stream_events(response))
            else:
                self._send(200, response, reply.headers)
            return
        completion_object = completion_body(request, reply)
        if streamed:
            self._stream(f"data: {json.dumps(chunk)}\n\n".encode()
                         for chunk in completion_chunks(completion_object))
        else:
            self._send(200, completion_object, reply.headers)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": 0, "owned_by": "limbo"}]})
            return
        self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def _send(self, status: int, payload: dict[str, Any],
              headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Iterator[bytes]) -> None:
        """Server-Sent Events; the connection closes at the end (no length to announce)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in events:
            self.wfile.write(event)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence per-request logging: thousands of lines per run help nobody."""


class OpenAIServer:
    """A scripted model endpoint on ``127.0.0.1`` (chat completions and Responses); use as a
    context manager.

    ``model`` may be swapped between episodes. ``latency_s`` delays every reply (on the
    handler's own thread, so concurrent requests overlap as they would against a provider).
    """

    def __init__(self, model: ScriptedModel, *, host: str = "127.0.0.1", port: int = 0,
                 latency_s: float = 0.0, keep_requests: bool = True) -> None:
        self.model = model
        self.latency_s = latency_s
        self.keep_requests = keep_requests
        self._host, self._port = host, port
        self._requests: list[ChatRequest] = []
        self._lock = threading.Lock()
        self._httpd: LoopbackHTTPServer | None = None
        self._bound_port: int | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> OpenAIServer:
        if self._httpd is not None:
            return self
        httpd = LoopbackHTTPServer((self._host, self._port), _Handler)
        httpd.owner = self  # type: ignore[attr-defined]
        self._bound_port = httpd.port
        self._httpd = httpd.serve_in_thread("limbo-openai-server")
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.stop()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses ------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port; still answered after :meth:`stop`, so that a client can be pointed
        at a server that is gone (connection refused), as the offline-replay tests do."""
        if self._bound_port is None:
            raise RuntimeError("server was never started")
        return self._bound_port

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}/v1"

    def model_options(self, **extra: Any) -> dict[str, Any]:
        """``model_options`` for the scaffold that point litellm at this server."""
        return {"api_base": self.base_url, "api_key": DUMMY_API_KEY, **extra}

    # -- what was received ----------------------------------------------------------------------
    @property
    def requests(self) -> list[ChatRequest]:
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()

    def _record(self, request: ChatRequest) -> None:
        if self.keep_requests:
            with self._lock:
                self._requests.append(request)


@contextlib.contextmanager
def server_process(policy: str = "verify_first", *, latency_s: float = 0.0,
                   contract: str = "native", docs: str = "default",
                   startup_timeout_s: float = 60.0) -> Iterator[str]:
    """Run :func:`main` in a child process and yield its base URL.

    Benchmarks use this so that the server's own work (HTTP parsing, replaying the policy) does
    not compete for the GIL with the episodes being measured.
    """
    command = [sys.executable, "-m", "limbo_plugin.testing.openai_server", "--policy", policy,
               "--latency", str(latency_s), "--contract", contract, "--docs", docs]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + startup_timeout_s
        line = ""
        while time.monotonic() < deadline and not line.startswith("listening on "):
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
        if not line.startswith("listening on "):
            raise RuntimeError("server did not start in time")
        yield line.split("listening on ", 1)[1].strip()
    finally:
        stop(process)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a scripted reference policy as a model until interrupted."""
    from limbo_plugin.spec.registry import SpecRegistry, default_specs_dir
    from limbo_plugin.testing.models import PolicyModel

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="verify_first",
                        help="scripted policy to serve as the model (default: verify_first)")
    parser.add_argument("--contract", default="native")
    parser.add_argument("--docs", default="default")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    args = parser.parse_args(argv)
    registry = SpecRegistry.load(default_specs_dir())
    model = PolicyModel(args.policy, registry=registry, contract=args.contract, docs=args.docs)
    server = OpenAIServer(model, host=args.host, port=args.port, latency_s=args.latency,
                          keep_requests=False)
    server.start()
    print(f"listening on {server.base_url}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop cleanly when terminated
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
